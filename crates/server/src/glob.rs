//! Glob matching with the results of Redis 7.0's `stringmatchlen`, used by KEYS, SCAN MATCH,
//! COMMAND LIST FILTERBY PATTERN, CONFIG GET and ACL key patterns.
//!
//! The syntax: `*` any run of bytes, `?` any one byte, `[abc]` a set, `[^abc]` its complement,
//! `[a-z]` a range (the ends may come in either order), `\x` the byte `x` itself. Redis's
//! quirks are kept, since a pattern that selects different keys than Redis would is a bug:
//! - An empty string matches only the empty pattern: `*` does not match `""`. (KEYS and SCAN
//!   treat the pattern `*` alone as "everything" before matching; callers must do the same,
//!   see [`GlobPattern::is_match_all`].)
//! - An unclosed `[` takes the rest of the pattern as its set (`[abc` matches `a`); `[]` is an
//!   empty set and `[^]` matches any byte; `]` or `-` right after a range start are range ends
//!   (`[a-]` is the range `]`..`a`, still unclosed).
//! - Inside a set, `\x` compares exactly even when matching without case; a trailing `\` is a
//!   literal backslash.
//! - Range ends and the byte compared are C `char`s, signed on the x86-64 and most other
//!   builds: bytes from 0x80 sort below 0 (`[a-\xff]` is the range -1..97). Case folding is
//!   ASCII only (the C locale), applied to range ends after ordering them.
//! - Redis gives up (no match) on a pattern needing more than 1000 nested `*` groups.
//!
//! Unlike Redis's recursive matcher, [`GlobPattern::matches`] runs in O(pattern × string)
//! time at worst, with no recursion.

/// The number of `*` groups Redis's matcher nests into before giving up.
const MAX_NESTING: usize = 1000;

/// One pattern element: `*`, or a test on exactly one byte.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Star,
    Any,
    Byte(u8),
    /// A 256-bit membership table: `[...]`, or a literal letter when matching without case.
    Set(Box<[u64; 4]>),
}

impl Token {
    fn accepts(&self, b: u8) -> bool {
        match self {
            Token::Star | Token::Any => true,
            Token::Byte(x) => *x == b,
            Token::Set(bits) => bits[usize::from(b >> 6)] & (1u64 << (b & 63)) != 0,
        }
    }
}

/// A compiled pattern, for matching many strings (KEYS, SCAN).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobPattern {
    tokens: Vec<Token>,
    /// Past Redis's nesting limit: matches no non-empty string.
    never: bool,
    match_all: bool,
}

/// C `tolower` in the C locale on a (signed) `char` value.
fn c_tolower(c: i32) -> i32 {
    if (i32::from(b'A')..=i32::from(b'Z')).contains(&c) {
        c + 32
    } else {
        c
    }
}

/// A byte as the C `char` Redis compares: signed, as on x86-64.
fn c_char(b: u8) -> i32 {
    i32::from(b as i8)
}

fn set_bit(bits: &mut [u64; 4], b: u8) {
    bits[usize::from(b >> 6)] |= 1u64 << (b & 63);
}

/// The token for a literal byte: with `nocase`, a letter matches both cases.
fn literal(b: u8, nocase: bool) -> Token {
    if nocase && b.is_ascii_alphabetic() {
        let mut bits = [0u64; 4];
        set_bit(&mut bits, b.to_ascii_lowercase());
        set_bit(&mut bits, b.to_ascii_uppercase());
        Token::Set(Box::new(bits))
    } else {
        Token::Byte(b)
    }
}

impl GlobPattern {
    /// Compiles `pattern`; `nocase` folds ASCII case as CONFIG GET and COMMAND LIST do.
    pub fn new(pattern: &[u8], nocase: bool) -> GlobPattern {
        let mut tokens = Vec::with_capacity(pattern.len());
        let n = pattern.len();
        let mut i = 0;
        while let Some(&c) = pattern.get(i) {
            i += 1;
            match c {
                b'*' => {
                    // Consecutive stars are one group, as Redis collapses them.
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                }
                b'?' => tokens.push(Token::Any),
                b'[' => {
                    let (bits, next) = parse_set(pattern, i, nocase);
                    i = next;
                    tokens.push(Token::Set(Box::new(bits)));
                }
                b'\\' if i < n => {
                    tokens.push(literal(pattern[i], nocase));
                    i += 1;
                }
                _ => tokens.push(literal(c, nocase)),
            }
        }
        // Redis returns "no match" when its recursion passes MAX_NESTING star groups. A match
        // must pass through every group in order, and the (MAX_NESTING + 1)th recurses unless
        // it ends the pattern, so such a pattern matches nothing.
        let mut groups = 0;
        let mut never = false;
        for (k, t) in tokens.iter().enumerate() {
            if *t == Token::Star {
                groups += 1;
                if groups > MAX_NESTING && k + 1 < tokens.len() {
                    never = true;
                    break;
                }
            }
        }
        GlobPattern {
            tokens,
            never,
            match_all: pattern == b"*",
        }
    }

    /// Whether the pattern is exactly `*`. KEYS and SCAN skip matching for it, so their
    /// results include the empty key, which [`matches`](Self::matches) would refuse.
    #[cfg(test)]
    pub fn is_match_all(&self) -> bool {
        self.match_all
    }

    /// Whether `string` matches, as Redis's `stringmatchlen` decides.
    pub fn matches(&self, string: &[u8]) -> bool {
        if string.is_empty() {
            // Redis's loop never starts on an empty string.
            return self.tokens.is_empty();
        }
        if self.never {
            return false;
        }
        let toks = &self.tokens;
        let (mut p, mut i) = (0usize, 0usize);
        // The latest star: the token after it, and where its current try starts. Going back
        // only to the latest star suffices because every other token takes exactly one byte.
        let mut star: Option<(usize, usize)> = None;
        while let Some(&b) = string.get(i) {
            match toks.get(p) {
                Some(Token::Star) => {
                    star = Some((p + 1, i));
                    p += 1;
                    continue;
                }
                Some(t) if t.accepts(b) => {
                    p += 1;
                    i += 1;
                    continue;
                }
                _ => {}
            }
            match star {
                Some((sp, si)) => {
                    p = sp;
                    i = si + 1;
                    star = Some((sp, si + 1));
                }
                None => return false,
            }
        }
        toks.get(p..)
            .is_some_and(|rest| rest.iter().all(|t| *t == Token::Star))
    }
}

/// Parses a set starting just after its `[`, as Redis reads it; returns its membership table
/// (complement applied) and the index after it.
fn parse_set(p: &[u8], mut i: usize, nocase: bool) -> ([u64; 4], usize) {
    let n = p.len();
    let mut bits = [0u64; 4];
    let negate = p.get(i) == Some(&b'^');
    if negate {
        i += 1;
    }
    // Running out of pattern leaves the set unclosed: it took the rest of the pattern.
    while let Some(&c) = p.get(i) {
        if c == b'\\' && n - i >= 2 {
            // Escaped: compared exactly, even without case.
            set_bit(&mut bits, p[i + 1]);
            i += 2;
        } else if c == b']' {
            i += 1;
            break;
        } else if n - i >= 3 && p[i + 1] == b'-' {
            let (mut lo, mut hi) = (c_char(c), c_char(p[i + 2]));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            if nocase {
                lo = c_tolower(lo);
                hi = c_tolower(hi);
            }
            for b in 0..=255u8 {
                let mut v = c_char(b);
                if nocase {
                    v = c_tolower(v);
                }
                if lo <= v && v <= hi {
                    set_bit(&mut bits, b);
                }
            }
            i += 3;
        } else {
            if nocase && c.is_ascii_alphabetic() {
                set_bit(&mut bits, c.to_ascii_lowercase());
                set_bit(&mut bits, c.to_ascii_uppercase());
            } else {
                set_bit(&mut bits, c);
            }
            i += 1;
        }
    }
    if negate {
        for w in &mut bits {
            *w = !*w;
        }
    }
    (bits, i)
}

/// Whether `string` matches `pattern` (see the module docs). Compile a [`GlobPattern`] once
/// to match many strings.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    // Quick rejection before compiling: no wildcard at all means plain comparison.
    if !pattern
        .iter()
        .any(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
    {
        return if nocase {
            pattern.eq_ignore_ascii_case(string)
        } else {
            pattern == string
        };
    }
    GlobPattern::new(pattern, nocase).matches(string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A direct model of Redis's recursive matcher (exponential in the worst case, so only
    /// for small inputs): reads past the end see a NUL byte, as on an sds string.
    fn reference(p: &[u8], s: &[u8], nocase: bool) -> bool {
        let mut skip = false;
        reference_at(p, s, nocase, &mut skip, 0)
    }

    fn at(p: &[u8], i: usize) -> u8 {
        p.get(i).copied().unwrap_or(0)
    }

    fn reference_at(p: &[u8], s: &[u8], nocase: bool, skip: &mut bool, nesting: usize) -> bool {
        if nesting > MAX_NESTING {
            return false;
        }
        let low = |c: i32| if nocase { c_tolower(c) } else { c };
        let (mut pi, mut si) = (0usize, 0usize);
        while pi < p.len() && si < s.len() {
            match p[pi] {
                b'*' => {
                    while pi < p.len() && at(p, pi + 1) == b'*' {
                        pi += 1;
                    }
                    if pi + 1 == p.len() {
                        return true;
                    }
                    while si < s.len() {
                        if reference_at(&p[pi + 1..], &s[si..], nocase, skip, nesting + 1) {
                            return true;
                        }
                        if *skip {
                            return false;
                        }
                        si += 1;
                    }
                    *skip = true;
                    return false;
                }
                b'?' => si += 1,
                b'[' => {
                    pi += 1;
                    let not = at(p, pi) == b'^' && pi < p.len();
                    if not {
                        pi += 1;
                    }
                    let mut m = false;
                    loop {
                        let rem = p.len().saturating_sub(pi);
                        if at(p, pi) == b'\\' && rem >= 2 {
                            pi += 1;
                            if p[pi] == s[si] {
                                m = true;
                            }
                        } else if at(p, pi) == b']' && rem > 0 {
                            break;
                        } else if rem == 0 {
                            pi -= 1;
                            break;
                        } else if rem >= 3 && p[pi + 1] == b'-' {
                            let (mut a, mut b) = (c_char(p[pi]), c_char(p[pi + 2]));
                            if a > b {
                                std::mem::swap(&mut a, &mut b);
                            }
                            let c = low(c_char(s[si]));
                            let (a, b) = (low(a), low(b));
                            pi += 2;
                            if c >= a && c <= b {
                                m = true;
                            }
                        } else if low(c_char(p[pi])) == low(c_char(s[si])) {
                            m = true;
                        }
                        pi += 1;
                    }
                    if not {
                        m = !m;
                    }
                    if !m {
                        return false;
                    }
                    si += 1;
                }
                c => {
                    let c = if c == b'\\' && p.len() - pi >= 2 {
                        pi += 1;
                        p[pi]
                    } else {
                        c
                    };
                    if low(c_char(c)) != low(c_char(s[si])) {
                        return false;
                    }
                    si += 1;
                }
            }
            pi += 1;
            if si == s.len() {
                while pi < p.len() && p[pi] == b'*' {
                    pi += 1;
                }
                break;
            }
        }
        pi == p.len() && si == s.len()
    }

    #[test]
    fn basics() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("*", "", false),
            ("", "", true),
            ("", "a", false),
            ("a*", "a", true),
            ("a*b", "ab", true),
            ("a*b", "axxb", true),
            ("a*b", "axxbc", false),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hbllo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("a\\", "a\\", true),
            ("[abc", "b", true),
            ("[abc", "bc", false),
            ("[]a", "a", false),
            ("[^]a", "xa", true),
            ("[a-]", "_", true),
            ("[a-]", "b", false),
            ("[\\]]", "]", true),
            ("[", "[", false),
            ("[^", "x", true),
            ("**a**", "xxa", true),
            ("*?", "a", true),
        ];
        for &(p, s, want) in cases {
            assert_eq!(
                glob_match(p.as_bytes(), s.as_bytes(), false),
                want,
                "{p:?} {s:?}"
            );
            assert_eq!(
                reference(p.as_bytes(), s.as_bytes(), false),
                want,
                "ref {p:?} {s:?}"
            );
        }
    }

    #[test]
    fn nocase() {
        assert!(glob_match(b"HeLLo", b"hello", true));
        assert!(glob_match(b"h[A-Z]llo", b"hello", true));
        assert!(!glob_match(b"h[A-Z]llo", b"hello", false));
        assert!(!glob_match(b"[\\A]", b"a", true)); // escaped in a set: exact
        assert!(glob_match(b"\\A", b"a", true)); // escaped outside a set: folded
        assert!(!glob_match(b"[Z-a]", b"z", true)); // folded after ordering: 'z'..'a' is empty
        assert!(glob_match(b"[Z-a]", b"Z", false));
    }

    #[test]
    fn signed_chars() {
        // 0xff is -1 as a C char: inside -1..=97 ('a').
        assert!(glob_match(b"[a-\xff]", b"\xff", false));
        assert!(glob_match(b"[a-\xff]", b"0", false));
        assert!(!glob_match(b"[a-\xff]", b"b", false));
        assert!(!glob_match(b"[a-\xff]", b"\x80", false));
        assert!(glob_match(b"[\x80-\xff]", b"\x90", false));
    }

    #[test]
    fn nesting_limit() {
        let key = vec![b'a'; 1001];
        let pat = |n: usize| b"*a".repeat(n);
        assert!(glob_match(&pat(1000), &key, false));
        assert!(!glob_match(&pat(1001), &key, false));
        assert!(reference(&pat(1000), &key, false));
        assert!(!reference(&pat(1001), &key, false));
        let mut last_star = pat(1000);
        last_star.push(b'*');
        assert!(glob_match(&last_star, &key, false));
    }

    #[test]
    fn pathological_is_fast() {
        let pattern = b"a*"
            .repeat(500)
            .into_iter()
            .chain(*b"b")
            .collect::<Vec<u8>>();
        let string = vec![b'a'; 5000];
        let t = std::time::Instant::now();
        assert!(!glob_match(&pattern, &string, false));
        assert!(t.elapsed() < std::time::Duration::from_secs(2));
    }

    fn small(alphabet: &'static [u8], max: usize) -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(proptest::sample::select(alphabet), 0..max)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn same_as_reference(
            p in small(b"ab*?[]^-\\", 9),
            s in small(b"ab-]^\\", 7),
            nocase in any::<bool>(),
        ) {
            prop_assert_eq!(glob_match(&p, &s, nocase), reference(&p, &s, nocase));
        }

        #[test]
        fn same_as_reference_any_bytes(
            p in proptest::collection::vec(any::<u8>(), 0..10),
            s in proptest::collection::vec(any::<u8>(), 0..8),
            nocase in any::<bool>(),
        ) {
            prop_assert_eq!(glob_match(&p, &s, nocase), reference(&p, &s, nocase));
        }

        #[test]
        fn same_as_reference_case_and_high_bytes(
            p in small(b"aA*[]^-\\\x80\xff", 8),
            s in small(b"aAZz\x80\xff0", 6),
            nocase in any::<bool>(),
        ) {
            prop_assert_eq!(glob_match(&p, &s, nocase), reference(&p, &s, nocase));
        }
    }
}
