//! Input arguments as files: plain files, output directories of part files (as Spark, Hive,
//! Flink, DuckDB and pandas write them) and glob patterns.
//!
//! - A **file** is taken as given, whatever its name.
//! - A **directory** gives every data file in it, sorted by name (`part-00000...` before
//!   `part-00001...`). Names starting with `.` or `_` (`_SUCCESS`, `_committed_*`,
//!   `_started_*`, `_temporary/`, `.part-0.crc`) and names ending in `.crc` are the writer's
//!   bookkeeping and are skipped. So is an empty CSV or JSONL file, which writers leave for an
//!   empty partition and which holds no record. Any other subdirectory is refused rather than
//!   read or skipped silently: a partitioned output is named with a pattern instead. A
//!   directory with no data file is an empty input.
//! - A **pattern** (a path that does not exist and holds `*`, `?` or `[`) gives the files it
//!   matches, sorted, with the same names skipped; a matched directory is read as above. A
//!   pattern matching nothing is an error.
//!
//! The files of one directory or pattern must be of one format, so that a stray file is not
//! read as something it is not.

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::{compressed, Format};

/// How [`expand_inputs`] treats directories and patterns.
#[derive(Clone, Debug, Default)]
pub struct ExpandOptions {
    /// The format every file is read as; `None`: each file's name says.
    pub format: Option<Format>,
    /// Refuse a directory without a `_SUCCESS` marker (its writer has not finished, or failed),
    /// and a file in such a directory. Off by default: many writers never write one.
    pub require_success_marker: bool,
}

/// The marker Hadoop's committers (so Spark and Hive) leave in a finished output directory.
const SUCCESS_MARKER: &str = "_SUCCESS";

/// Turns input arguments into the files to read, in order: each argument's files in turn (see
/// the module docs). A path that does not exist and is not a pattern is passed through, for
/// [`crate::open`] to report.
pub fn expand_inputs(
    inputs: &[PathBuf],
    opts: &ExpandOptions,
) -> Result<Vec<PathBuf>, ExpandError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut marked = HashSet::new();
    for input in inputs {
        let files = match std::fs::metadata(input) {
            Ok(m) if m.is_dir() => {
                let files = list_dir(input, opts)?;
                check_one_format(input, &files, opts.format)?;
                files
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound && is_pattern(input) => {
                let files = expand_pattern(input, opts)?;
                check_one_format(input, &files, opts.format)?;
                files
            }
            _ => vec![input.clone()],
        };
        for f in files {
            if opts.require_success_marker {
                let dir = match f.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d,
                    _ => Path::new("."),
                };
                if !marked.contains(dir) {
                    check_marker(dir)?;
                    marked.insert(dir.to_path_buf());
                }
            }
            // A file read twice would fail the push as duplicates, or double it with last-wins.
            let id = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
            if !seen.insert(id) {
                return Err(ExpandError::Twice { file: f });
            }
            out.push(f);
        }
    }
    Ok(out)
}

/// Why input arguments cannot be turned into files.
#[derive(Debug)]
pub enum ExpandError {
    /// A pattern matched no data file.
    NoMatch { pattern: PathBuf },
    /// A pattern that does not parse, or is not UTF-8.
    BadPattern { pattern: PathBuf, reason: String },
    /// A directory could not be listed, or an entry's type read.
    Io { path: PathBuf, error: io::Error },
    /// A directory holds a subdirectory that is not bookkeeping.
    Subdirectory { dir: PathBuf, sub: PathBuf },
    /// `require_success_marker` and the directory has none.
    NoSuccessMarker { dir: PathBuf },
    /// A directory or pattern gives files of two formats.
    MixedFormats {
        input: PathBuf,
        first: (PathBuf, Format),
        other: (PathBuf, Format),
    },
    /// A file of a directory or pattern is named as another format than the one given.
    NotTheFormat {
        file: PathBuf,
        named: Format,
        given: Format,
    },
    /// The same file given twice (directly, or through directories or patterns).
    Twice { file: PathBuf },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpandError::NoMatch { pattern } => {
                write!(f, "no data file matches {}", pattern.display())
            }
            ExpandError::BadPattern { pattern, reason } => {
                write!(f, "bad pattern {}: {reason}", pattern.display())
            }
            ExpandError::Io { path, error } => {
                write!(f, "{}: cannot list: {error}", path.display())
            }
            ExpandError::Subdirectory { dir, sub } => write!(
                f,
                "{}: holds the directory {}, which is not read; name the files to read with a \
                 pattern such as '{}'",
                dir.display(),
                sub.display(),
                dir.join("*").join("part-*").display()
            ),
            ExpandError::NoSuccessMarker { dir } => write!(
                f,
                "{}: no {SUCCESS_MARKER} marker: the job writing it has not finished, or failed \
                 (a marker is required)",
                dir.display()
            ),
            ExpandError::MixedFormats {
                input,
                first,
                other,
            } => write!(
                f,
                "{}: holds files of two formats, {} ({}) and {} ({}); give one format at a time",
                input.display(),
                first.1,
                first.0.display(),
                other.1,
                other.0.display()
            ),
            ExpandError::NotTheFormat { file, named, given } => write!(
                f,
                "{}: named as {named}, but the format given is {given}",
                file.display()
            ),
            ExpandError::Twice { file } => {
                write!(
                    f,
                    "{}: given twice (it would be read twice)",
                    file.display()
                )
            }
        }
    }
}

impl std::error::Error for ExpandError {}

/// Bookkeeping of writers and committers, never data.
fn is_ignored(name: &std::ffi::OsStr) -> bool {
    let b = name.as_encoded_bytes();
    b.starts_with(b".")
        || b.starts_with(b"_")
        || compressed::lower_extension(Path::new(name)).as_deref() == Some("crc")
}

/// An empty CSV or JSONL file holds no record (an empty CSV has not even a header, which would
/// fail its reader); an empty Parquet file is damaged, so it is kept, to be refused.
fn is_empty_text(path: &Path, len: u64, opts: &ExpandOptions) -> bool {
    let format = opts.format.or_else(|| Format::from_path(path));
    len == 0 && matches!(format, Some(Format::Csv | Format::Jsonl))
}

fn list_dir(dir: &Path, opts: &ExpandOptions) -> Result<Vec<PathBuf>, ExpandError> {
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |error| ExpandError::Io { path, error }
    };
    if opts.require_success_marker {
        // Here too, for a directory with no data file.
        check_marker(dir)?;
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name();
        if is_ignored(&name) {
            continue;
        }
        let path = entry.path();
        // Through symbolic links, as opening the file would.
        let meta = std::fs::metadata(&path).map_err(io_err(&path))?;
        if meta.is_dir() {
            return Err(ExpandError::Subdirectory {
                dir: dir.to_path_buf(),
                sub: path,
            });
        }
        if !is_empty_text(&path, meta.len(), opts) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn check_marker(dir: &Path) -> Result<(), ExpandError> {
    match std::fs::metadata(dir.join(SUCCESS_MARKER)) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(ExpandError::NoSuccessMarker {
            dir: dir.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(ExpandError::NoSuccessMarker {
            dir: dir.to_path_buf(),
        }),
        Err(error) => Err(ExpandError::Io {
            path: dir.join(SUCCESS_MARKER),
            error,
        }),
    }
}

fn is_pattern(p: &Path) -> bool {
    p.as_os_str()
        .as_encoded_bytes()
        .iter()
        .any(|b| matches!(b, b'*' | b'?' | b'['))
}

fn expand_pattern(pattern: &Path, opts: &ExpandOptions) -> Result<Vec<PathBuf>, ExpandError> {
    let bad = |reason: String| ExpandError::BadPattern {
        pattern: pattern.to_path_buf(),
        reason,
    };
    let text = pattern
        .to_str()
        .ok_or_else(|| bad("not UTF-8".to_string()))?;
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: true,
    };
    let matches = glob::glob_with(text, options)
        .map_err(|e| bad(format!("{} at character {}", e.msg, e.pos + 1)))?;
    // Components the pattern names literally (`out/_tmp` in `out/_tmp/part-*`) are the user's
    // choice; only the ones a wildcard matched are checked against the bookkeeping names.
    let literal = pattern
        .components()
        .take_while(|c| !is_pattern(Path::new(c.as_os_str())))
        .count();
    let mut files = Vec::new();
    let mut matched = false;
    for m in matches {
        let path = m.map_err(|e| ExpandError::Io {
            path: e.path().to_path_buf(),
            error: e.into(),
        })?;
        let bookkeeping = path.components().skip(literal).any(|c| match c {
            Component::Normal(name) => is_ignored(name),
            _ => false,
        });
        if bookkeeping {
            continue;
        }
        let meta = std::fs::metadata(&path).map_err(|error| ExpandError::Io {
            path: path.clone(),
            error,
        })?;
        matched = true;
        if meta.is_dir() {
            files.extend(list_dir(&path, opts)?);
        } else if !is_empty_text(&path, meta.len(), opts) {
            files.push(path);
        }
    }
    if !matched {
        return Err(ExpandError::NoMatch {
            pattern: pattern.to_path_buf(),
        });
    }
    files.sort();
    Ok(files)
}

fn check_one_format(
    input: &Path,
    files: &[PathBuf],
    given: Option<Format>,
) -> Result<(), ExpandError> {
    let mut first: Option<(&Path, Format)> = None;
    for file in files {
        let Some(named) = Format::from_path(file) else {
            continue;
        };
        if let Some(given) = given.filter(|g| *g != named) {
            return Err(ExpandError::NotTheFormat {
                file: file.clone(),
                named,
                given,
            });
        }
        match first {
            None => first = Some((file, named)),
            Some((f, format)) if format != named => {
                return Err(ExpandError::MixedFormats {
                    input: input.to_path_buf(),
                    first: (f.to_path_buf(), format),
                    other: (file.clone(), named),
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, name: &str, body: &str) -> PathBuf {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, body).unwrap();
        p
    }

    fn expand(inputs: &[&Path], opts: &ExpandOptions) -> Result<Vec<PathBuf>, ExpandError> {
        let inputs: Vec<PathBuf> = inputs.iter().map(|p| p.to_path_buf()).collect();
        expand_inputs(&inputs, opts)
    }

    /// File names relative to `base`.
    fn names(files: &[PathBuf], base: &Path) -> Vec<String> {
        files
            .iter()
            .map(|f| f.strip_prefix(base).unwrap().display().to_string())
            .collect()
    }

    /// A Spark output directory: part files, the committer's bookkeeping, checksums.
    fn spark_dir(base: &Path) -> PathBuf {
        let out = base.join("out");
        for name in [
            "part-00001-a1b2-c000.csv",
            "part-00000-a1b2-c000.csv",
            "part-00010-a1b2-c000.csv.gz",
        ] {
            touch(&out, name, "key,value\nk,v\n");
        }
        touch(&out, "part-00002-a1b2-c000.csv", ""); // an empty partition
        touch(&out, "_SUCCESS", "");
        touch(&out, "_committed_123", "{}");
        touch(&out, "_started_123", "");
        touch(&out, ".part-00000-a1b2-c000.csv.crc", "crc");
        touch(&out, "part-00000-a1b2-c000.csv.crc", "crc");
        touch(&out, ".DS_Store", "x");
        touch(&out, "_temporary/0/part-00003.csv", "key,value\nk,v\n");
        out
    }

    #[test]
    fn a_directory_gives_its_data_files_sorted_without_bookkeeping() {
        let t = tempfile::tempdir().unwrap();
        let out = spark_dir(t.path());
        let files = expand(&[&out], &ExpandOptions::default()).unwrap();
        assert_eq!(
            names(&files, &out),
            [
                "part-00000-a1b2-c000.csv",
                "part-00001-a1b2-c000.csv",
                "part-00010-a1b2-c000.csv.gz",
            ]
        );
        // The same with a trailing slash, and with the marker required (it is there).
        let slash = PathBuf::from(format!("{}/", out.display()));
        let opts = ExpandOptions {
            require_success_marker: true,
            ..ExpandOptions::default()
        };
        assert_eq!(expand(&[&slash], &opts).unwrap().len(), 3);
    }

    #[test]
    fn the_success_marker_is_checked_only_when_required() {
        let t = tempfile::tempdir().unwrap();
        let out = spark_dir(t.path());
        std::fs::remove_file(out.join("_SUCCESS")).unwrap();
        assert_eq!(expand(&[&out], &ExpandOptions::default()).unwrap().len(), 3);
        let opts = ExpandOptions {
            require_success_marker: true,
            ..ExpandOptions::default()
        };
        let e = expand(&[&out], &opts).unwrap_err();
        assert!(
            matches!(&e, ExpandError::NoSuccessMarker { dir } if dir == &out),
            "{e}"
        );
        assert!(e.to_string().contains("no _SUCCESS marker"), "{e}");
        // For a pattern or a file too: the directory they are in.
        let pattern = out.join("part-*");
        let e = expand(&[&pattern], &opts).unwrap_err();
        assert!(matches!(e, ExpandError::NoSuccessMarker { .. }), "{e}");
        let e = expand(&[&out.join("part-00000-a1b2-c000.csv")], &opts).unwrap_err();
        assert!(matches!(e, ExpandError::NoSuccessMarker { .. }), "{e}");
        // An empty directory without one.
        let empty = t.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let e = expand(&[&empty], &opts).unwrap_err();
        assert!(matches!(e, ExpandError::NoSuccessMarker { .. }), "{e}");
    }

    #[test]
    fn a_directory_without_data_files_is_an_empty_input() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        touch(&out, "_SUCCESS", "");
        touch(&out, ".hidden.csv", "key,value\nk,v\n");
        touch(&out, "part-0.jsonl", "");
        assert!(expand(&[&out], &ExpandOptions::default())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn an_empty_parquet_file_is_kept_to_be_refused() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        touch(&out, "part-0.parquet", "");
        assert_eq!(expand(&[&out], &ExpandOptions::default()).unwrap().len(), 1);
    }

    #[test]
    fn subdirectories_are_refused_unless_bookkeeping() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        touch(&out, "dt=2024-01-01/part-0.csv", "key,value\nk,v\n");
        touch(&out, "dt=2024-01-02/part-0.csv", "key,value\nk,v\n");
        touch(&out, "_temporary/part-0.csv", "key,value\nk,v\n");
        let e = expand(&[&out], &ExpandOptions::default()).unwrap_err();
        assert!(matches!(e, ExpandError::Subdirectory { .. }), "{e}");
        assert!(e.to_string().contains("dt=2024-01-0"), "{e}");
        // A pattern names the partitions; each matched directory is read.
        let files = expand(&[&out.join("dt=*")], &ExpandOptions::default()).unwrap();
        assert_eq!(
            names(&files, &out),
            ["dt=2024-01-01/part-0.csv", "dt=2024-01-02/part-0.csv"]
        );
        let files = expand(&[&out.join("*/part-*")], &ExpandOptions::default()).unwrap();
        assert_eq!(files.len(), 2, "_temporary is not matched: {files:?}");
    }

    #[test]
    fn patterns_expand_sorted_and_skip_bookkeeping() {
        let t = tempfile::tempdir().unwrap();
        let out = spark_dir(t.path());
        let files = expand(&[&out.join("part-*.csv")], &ExpandOptions::default()).unwrap();
        assert_eq!(
            names(&files, &out),
            ["part-00000-a1b2-c000.csv", "part-00001-a1b2-c000.csv"]
        );
        let files = expand(&[&out.join("*")], &ExpandOptions::default()).unwrap();
        assert_eq!(files.len(), 3, "{files:?}");
        let files = expand(&[&out.join("part-0000[01]-*")], &ExpandOptions::default()).unwrap();
        assert_eq!(files.len(), 2, "{files:?}");
        // Several inputs keep their order; each one's files are sorted.
        let a = touch(t.path(), "z.csv", "key,value\nz,1\n");
        let files = expand(
            &[&a, &out.join("part-0000?-*.csv")],
            &ExpandOptions::default(),
        )
        .unwrap();
        assert_eq!(names(&files, t.path())[0], "z.csv");
        assert_eq!(files.len(), 3);
        // A component the pattern names literally may start with '_'.
        let files = expand(
            &[&out.join("_temporary").join("*").join("*.csv")],
            &ExpandOptions::default(),
        )
        .unwrap();
        assert_eq!(files.len(), 1);
    }

    #[test]
    fn a_pattern_matching_nothing_or_malformed_is_an_error() {
        let t = tempfile::tempdir().unwrap();
        let out = spark_dir(t.path());
        for p in [
            out.join("*.parquet"),
            out.join("_*"),
            t.path().join("nope/*"),
        ] {
            let e = expand(&[&p], &ExpandOptions::default()).unwrap_err();
            assert!(matches!(e, ExpandError::NoMatch { .. }), "{e}");
            assert_eq!(
                e.to_string(),
                format!("no data file matches {}", p.display())
            );
        }
        let e = expand(&[&out.join("part-[")], &ExpandOptions::default()).unwrap_err();
        assert!(matches!(e, ExpandError::BadPattern { .. }), "{e}");
        // A file whose name looks like a pattern is a file.
        let odd = touch(t.path(), "odd[1].csv", "key,value\nk,v\n");
        assert_eq!(expand(&[&odd], &ExpandOptions::default()).unwrap(), [odd]);
        // A missing plain path is left for opening to report.
        let missing = t.path().join("missing.csv");
        assert_eq!(
            expand(&[&missing], &ExpandOptions::default()).unwrap(),
            [missing]
        );
    }

    #[test]
    fn one_format_per_directory_or_pattern() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("out");
        touch(&out, "part-0.csv", "key,value\nk,v\n");
        touch(&out, "part-1.jsonl.zst", "x");
        let e = expand(&[&out], &ExpandOptions::default()).unwrap_err();
        assert!(matches!(e, ExpandError::MixedFormats { .. }), "{e}");
        let line = e.to_string();
        assert!(
            line.contains("two formats, csv (") && line.contains("and jsonl ("),
            "{line}"
        );
        let e = expand(&[&out.join("part-*")], &ExpandOptions::default()).unwrap_err();
        assert!(matches!(e, ExpandError::MixedFormats { .. }), "{e}");
        // A format given must agree with every name that says one.
        let opts = ExpandOptions {
            format: Some(Format::Csv),
            ..ExpandOptions::default()
        };
        let e = expand(&[&out], &opts).unwrap_err();
        assert!(
            matches!(
                e,
                ExpandError::NotTheFormat {
                    named: Format::Jsonl,
                    given: Format::Csv,
                    ..
                }
            ),
            "{e}"
        );
        // Names without a format (Spark's JSON writes .json) take the one given.
        let json = t.path().join("json");
        touch(&json, "part-0.json", "{}\n");
        touch(&json, "part-1.json", "{}\n");
        let opts = ExpandOptions {
            format: Some(Format::Jsonl),
            ..ExpandOptions::default()
        };
        assert_eq!(expand(&[&json], &opts).unwrap().len(), 2);
        // Separate inputs may differ.
        let a = touch(t.path(), "a.csv", "key,value\nk,v\n");
        let b = touch(t.path(), "b.jsonl", "{}\n");
        assert_eq!(
            expand(&[&a, &b], &ExpandOptions::default()).unwrap().len(),
            2
        );
    }

    #[test]
    fn a_file_given_twice_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let out = spark_dir(t.path());
        let part = out.join("part-00000-a1b2-c000.csv");
        let e = expand(&[&out, &part], &ExpandOptions::default()).unwrap_err();
        assert!(
            matches!(&e, ExpandError::Twice { file } if file == &part),
            "{e}"
        );
        let dotted = out.join(".").join("part-00000-a1b2-c000.csv");
        let e = expand(&[&part, &dotted], &ExpandOptions::default()).unwrap_err();
        assert!(matches!(e, ExpandError::Twice { .. }), "{e}");
    }
}
