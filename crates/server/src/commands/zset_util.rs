//! What the sorted-set commands share: Redis's parsing of scores and ranges, and the shape of
//! their replies.

use bytes::Bytes;
use rialto_keyspace::{LexBound, LexRange, Score, ScoreRange};
use rialto_resp::{Protocol, Reply};

use crate::reply::{self, CmdResult};

pub use rialto_keyspace::parse_double as parse_score;
use rialto_keyspace::strtod_prefix as strtod;

/// A score argument, or `ERR value is not a valid float`.
pub fn score_arg(arg: &[u8]) -> CmdResult<Score> {
    parse_score(arg).map(Score).ok_or_else(reply::not_float)
}

/// One end of a score range as Redis's `zslParseRange` reads it: `(` makes it exclusive; the
/// rest is read by `strtod` to its end (an empty text is 0), NaN refused.
fn range_item(arg: &[u8]) -> Option<(f64, bool)> {
    let (ex, text) = match arg.split_first() {
        Some((b'(', rest)) => (true, rest),
        _ => (false, arg),
    };
    let c_len = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    let (v, used, _) = strtod(text);
    (used == c_len && !v.is_nan()).then_some((v, ex))
}

/// A score range, or `ERR min or max is not a float`.
pub fn score_range(min: &[u8], max: &[u8]) -> CmdResult<ScoreRange> {
    match (range_item(min), range_item(max)) {
        (Some((min, min_ex)), Some((max, max_ex))) => Ok(ScoreRange {
            min: Score(min),
            max: Score(max),
            min_ex,
            max_ex,
        }),
        _ => Err(Reply::error("ERR min or max is not a float")),
    }
}

fn lex_item(arg: &[u8]) -> Option<LexBound> {
    let alone = |rest: &[u8]| rest.first().is_none_or(|&b| b == 0);
    match arg.split_first() {
        Some((b'+', rest)) if alone(rest) => Some(LexBound::Max),
        Some((b'-', rest)) if alone(rest) => Some(LexBound::Min),
        Some((b'(', rest)) => Some(LexBound::Excl(Bytes::copy_from_slice(rest))),
        Some((b'[', rest)) => Some(LexBound::Incl(Bytes::copy_from_slice(rest))),
        _ => None,
    }
}

/// A member range, or `ERR min or max not valid string range item`.
pub fn lex_range(min: &[u8], max: &[u8]) -> CmdResult<LexRange> {
    match (lex_item(min), lex_item(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(Reply::error("ERR min or max not valid string range item")),
    }
}

/// Members, with their scores as pairs when asked (RESP3 nested, RESP2 flat).
pub fn members_reply(items: Vec<(Bytes, f64)>, with_scores: bool) -> Reply {
    if with_scores {
        Reply::Pairs(
            items
                .into_iter()
                .map(|(m, s)| (Reply::Bulk(m), Reply::Double(s)))
                .collect(),
        )
    } else {
        Reply::Array(items.into_iter().map(|(m, _)| Reply::Bulk(m)).collect())
    }
}

/// A score as Redis writes it into a string (`%.17g`, `inf`, `-inf`): ZSCAN's replies and
/// DEBUG DIGEST.
pub fn score_text(s: f64) -> Bytes {
    match Reply::Double(s).as_received(Protocol::Resp2) {
        Reply::Bulk(b) => b,
        _ => Bytes::new(),
    }
}

/// A score as a listpack holds it, which ZSCAN of a packed set returns: an integral score
/// within ±(2^63 - 1) / 2 is stored as an integer (Redis's `double2ll`), any other as
/// [`score_text`].
pub fn packed_score_text(s: f64) -> Bytes {
    let bound = (i64::MAX / 2) as f64;
    if (-bound..=bound).contains(&s) && (s as i64) as f64 == s {
        return Bytes::from((s as i64).to_string());
    }
    score_text(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_as_string2d() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"1e-320").map(|v| v > 0.0), Some(true));
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"nan",
            b"1e400",
            b"1e-400",
            b"abc",
            b"1\x002",
        ] {
            assert_eq!(parse_score(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn range_ends_parse_as_zslparserange() {
        assert_eq!(range_item(b"(1.5"), Some((1.5, true)));
        assert_eq!(range_item(b""), Some((0.0, false)));
        assert_eq!(range_item(b"("), Some((0.0, true)));
        assert_eq!(range_item(b" 2"), Some((2.0, false)));
        assert_eq!(range_item(b"1e400"), Some((f64::INFINITY, false)));
        assert_eq!(range_item(b"3\x00x"), Some((3.0, false)));
        assert_eq!(range_item(b"nan"), None);
        assert_eq!(range_item(b"1x"), None);
    }

    #[test]
    fn lex_ends_parse_as_zslparselexrangeitem() {
        assert_eq!(lex_item(b"+"), Some(LexBound::Max));
        assert_eq!(lex_item(b"-"), Some(LexBound::Min));
        assert_eq!(lex_item(b"[a"), Some(LexBound::Incl(Bytes::from("a"))));
        assert_eq!(lex_item(b"("), Some(LexBound::Excl(Bytes::new())));
        assert_eq!(lex_item(b"+a"), None);
        assert_eq!(lex_item(b"a"), None);
        assert_eq!(lex_item(b""), None);
    }

    #[test]
    fn packed_scores_print_as_a_listpack_holds_them() {
        assert_eq!(
            packed_score_text(123456789012345678.0),
            Bytes::from("123456789012345680")
        );
        assert_eq!(packed_score_text(1e20), Bytes::from("1e+20"));
        assert_eq!(packed_score_text(1.5), Bytes::from("1.5"));
        assert_eq!(packed_score_text(3.0), Bytes::from("3"));
    }

    #[test]
    fn scores_print_as_redis_7_0() {
        assert_eq!(score_text(0.1), Bytes::from("0.10000000000000001"));
        assert_eq!(score_text(3.0), Bytes::from("3"));
        assert_eq!(score_text(f64::NEG_INFINITY), Bytes::from("-inf"));
    }
}
