//! Gzip and Zstandard inputs: CSV and JSONL files streamed through a decoder.
//!
//! The compression comes from the file name's last suffix (`.gz`, `.zst`) and the format from
//! the suffix before it (`day1.csv.gz`). The decoder reads the file through a fixed buffer and
//! the record reader reads the decoder through its own, so memory does not grow with the file.
//! Progress counts compressed bytes taken from the file, against the file's size, so that a
//! push's percentage and ETA stay right when compressed and plain files mix.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::{InputError, Location, Record, RecordReader};

/// Compressed bytes read from the file per refill of the decoder.
const COMPRESSED_BUF_SIZE: usize = 256 << 10;

/// How an input file is compressed as a whole (Parquet compresses its own pages instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    Gzip,
    Zstd,
}

impl Compression {
    /// The compression a file's last suffix names: `.gz`, `.zst` or `.zstd` (case-insensitive).
    pub fn from_path(p: &Path) -> Option<Compression> {
        match lower_extension(p)?.as_str() {
            "gz" => Some(Compression::Gzip),
            "zst" | "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// A suffix of a compression push does not read, so that such a file is refused by what it is
/// rather than as an unknown format.
pub(crate) fn unsupported_compression(p: &Path) -> Option<String> {
    let ext = lower_extension(p)?;
    matches!(
        ext.as_str(),
        "bz2" | "xz" | "lz4" | "snappy" | "deflate" | "zip" | "br" | "lzo" | "7z"
    )
    .then_some(ext)
}

pub(crate) fn lower_extension(p: &Path) -> Option<String> {
    p.extension()
        .and_then(OsStr::to_str)
        .map(str::to_ascii_lowercase)
}

/// A file read through a decoder, counting the compressed bytes taken from it.
pub(crate) fn decoder(
    file: File,
    compression: Compression,
) -> io::Result<(Box<dyn Read + Send>, Arc<AtomicU64>)> {
    let consumed = Arc::new(AtomicU64::new(0));
    let counted = BufReader::with_capacity(
        COMPRESSED_BUF_SIZE,
        Counting {
            inner: file,
            consumed: Arc::clone(&consumed),
        },
    );
    let stream: Box<dyn Read + Send> = match compression {
        // Multi-member: `cat a.gz b.gz` and block-gzip tools write several members.
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(counted)),
        // Reads every frame to the end of the file; the window stays within the library's
        // default limit (128 MiB), so a frame asking for more is refused rather than allocated.
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(counted)?),
    };
    Ok((
        Box::new(Labeled {
            inner: stream,
            compression,
        }),
        consumed,
    ))
}

/// Names the codec in read errors: a decoder's own ("unexpected end of file") do not say the
/// file is compressed.
struct Labeled<R> {
    inner: R,
    compression: Compression,
}

impl<R: Read> Read for Labeled<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.compression.name())))
    }
}

struct Counting<R> {
    inner: R,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A record reader over a decoder: records and locations are the inner reader's (lines of the
/// decompressed text), progress is in compressed bytes of the file.
pub(crate) struct Decompressed {
    pub(crate) inner: Box<dyn RecordReader>,
    pub(crate) consumed: Arc<AtomicU64>,
    pub(crate) total: u64,
}

impl RecordReader for Decompressed {
    fn read_record(&mut self) -> Result<Option<Record<'_>>, InputError> {
        self.inner.read_record()
    }

    fn bytes_read(&self) -> u64 {
        self.consumed.load(Ordering::Relaxed).min(self.total)
    }

    fn total_bytes(&self) -> u64 {
        self.total
    }

    fn location(&self) -> Location {
        self.inner.location()
    }

    fn skipped(&self) -> u64 {
        self.inner.skipped()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::PathBuf;

    use super::*;
    use crate::{open, Format, InputSpec};

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::stream::encode_all(data, 3).unwrap()
    }

    fn write(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, data).unwrap();
        p
    }

    /// Every record of `path`, checking that progress only grows and ends at the file's size.
    fn read_all(path: &Path) -> Result<Vec<(String, String)>, InputError> {
        let mut r = open(path, &InputSpec::default())?;
        let total = std::fs::metadata(path).unwrap().len();
        assert_eq!(r.total_bytes(), total);
        let (mut k, mut v) = (Vec::new(), Vec::new());
        let mut out = Vec::new();
        let mut last = 0;
        while r.next_record(&mut k, &mut v)? {
            assert!(r.bytes_read() >= last && r.bytes_read() <= total);
            last = r.bytes_read();
            out.push((
                String::from_utf8(k.clone()).unwrap(),
                String::from_utf8(v.clone()).unwrap(),
            ));
        }
        assert_eq!(r.bytes_read(), total, "{}", path.display());
        Ok(out)
    }

    /// A CSV and a JSONL text of `n` records, values varied enough not to compress to nothing.
    fn texts(n: usize) -> (String, String, Vec<(String, String)>) {
        let mut csv = String::from("key,value\n");
        let mut jsonl = String::new();
        let mut want = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (k, v) = (format!("k{i:07}"), format!("{x:016x}"));
            csv.push_str(&format!("{k},{v}\n"));
            jsonl.push_str(&format!("{{\"key\":\"{k}\",\"value\":\"{v}\"}}\n"));
            want.push((k, v));
        }
        (csv, jsonl, want)
    }

    #[test]
    fn names_give_the_compression_and_the_format_before_it() {
        let p = |s: &str| {
            (
                Compression::from_path(Path::new(s)),
                Format::from_path(Path::new(s)),
            )
        };
        assert_eq!(p("x.csv.gz"), (Some(Compression::Gzip), Some(Format::Csv)));
        assert_eq!(p("x.CSV.GZ"), (Some(Compression::Gzip), Some(Format::Csv)));
        assert_eq!(
            p("x.jsonl.zst"),
            (Some(Compression::Zstd), Some(Format::Jsonl))
        );
        assert_eq!(
            p("x.ndjson.zstd"),
            (Some(Compression::Zstd), Some(Format::Jsonl))
        );
        assert_eq!(p("x.csv"), (None, Some(Format::Csv)));
        assert_eq!(p("x.gz"), (Some(Compression::Gzip), None));
        assert_eq!(p("x.json.gz"), (Some(Compression::Gzip), None));
        assert_eq!(p("x.csv.bz2"), (None, None));
        assert_eq!(p("x.gz.csv"), (None, Some(Format::Csv)));
    }

    #[test]
    fn gzip_and_zstd_csv_and_jsonl_read_as_the_plain_files() {
        let t = tempfile::tempdir().unwrap();
        let (csv, jsonl, want) = texts(20_000);
        for (name, data) in [
            ("a.csv", csv.as_bytes().to_vec()),
            ("a.csv.gz", gzip(csv.as_bytes())),
            ("a.csv.zst", zstd(csv.as_bytes())),
            ("a.jsonl", jsonl.as_bytes().to_vec()),
            ("a.jsonl.gz", gzip(jsonl.as_bytes())),
            ("a.jsonl.zst", zstd(jsonl.as_bytes())),
        ] {
            let p = write(t.path(), name, &data);
            assert_eq!(read_all(&p).unwrap(), want, "{name}");
        }
        // An explicit format reads a file whose name gives only the compression.
        let p = write(t.path(), "export.gz", &gzip(csv.as_bytes()));
        let spec = InputSpec {
            format: Some(Format::Csv),
            ..InputSpec::default()
        };
        let mut r = open(&p, &spec).unwrap();
        assert_eq!(
            r.read_record().unwrap(),
            Some((&b"k0000000"[..], want[0].1.as_bytes()))
        );
    }

    /// Several gzip members (`cat a.gz b.gz`) and several zstd frames are one stream.
    #[test]
    fn concatenated_members_and_frames_are_read_to_the_end() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = ("key,value\nk1,v1\n", "k2,v2\n");
        let mut gz = gzip(a.as_bytes());
        gz.extend(gzip(b.as_bytes()));
        let mut zst = zstd(a.as_bytes());
        zst.extend(zstd(b.as_bytes()));
        let want = vec![
            ("k1".to_string(), "v1".to_string()),
            ("k2".to_string(), "v2".to_string()),
        ];
        assert_eq!(read_all(&write(t.path(), "m.csv.gz", &gz)).unwrap(), want);
        assert_eq!(read_all(&write(t.path(), "m.csv.zst", &zst)).unwrap(), want);
    }

    /// The file is decoded as it is read: after the first record only about one buffer of it
    /// has been taken, whatever its size.
    #[test]
    fn a_large_compressed_file_is_streamed() {
        let t = tempfile::tempdir().unwrap();
        let (csv, jsonl, _) = texts(400_000);
        for (name, data) in [
            ("big.csv.gz", gzip(csv.as_bytes())),
            ("big.jsonl.zst", zstd(jsonl.as_bytes())),
        ] {
            let p = write(t.path(), name, &data);
            let total = data.len() as u64;
            assert!(total > 4 * COMPRESSED_BUF_SIZE as u64, "{name}: {total}");
            let mut r = open(&p, &InputSpec::default()).unwrap();
            assert!(r.read_record().unwrap().is_some());
            let after_first = r.bytes_read();
            assert!(
                after_first <= 2 * COMPRESSED_BUF_SIZE as u64,
                "{name}: {after_first} of {total} bytes taken for one record"
            );
            let mut n = 1;
            while r.read_record().unwrap().is_some() {
                n += 1;
            }
            assert_eq!((n, r.bytes_read()), (400_000, total), "{name}");
        }
    }

    #[test]
    fn damaged_or_truncated_compressed_files_are_errors_naming_the_file() {
        let t = tempfile::tempdir().unwrap();
        let (csv, jsonl, _) = texts(5_000);
        let gz = gzip(csv.as_bytes());
        let zst = zstd(jsonl.as_bytes());
        let mut flipped = gz.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0xff;
        for (name, data) in [
            ("cut.csv.gz", gz[..gz.len() / 2].to_vec()),
            ("cut.jsonl.zst", zst[..zst.len() / 2].to_vec()),
            ("flipped.csv.gz", flipped),
            ("plain.csv.gz", csv.as_bytes().to_vec()),
            ("plain.jsonl.zst", jsonl.as_bytes().to_vec()),
            ("empty.csv.gz", Vec::new()),
        ] {
            let p = write(t.path(), name, &data);
            let e = read_all(&p).expect_err(name);
            let line = e.to_string();
            assert!(line.starts_with(&p.display().to_string()), "{line}");
            assert!(!line.contains('\n'), "{line}");
        }
    }

    #[test]
    fn compressed_parquet_and_other_compressions_are_refused_by_name() {
        let t = tempfile::tempdir().unwrap();
        let p = write(t.path(), "x.parquet.gz", &gzip(b"PAR1"));
        let e = open(&p, &InputSpec::default()).err().expect("refused");
        assert!(e.reason.contains("Parquet compresses its own pages"), "{e}");
        let p = write(t.path(), "x.csv.bz2", b"BZh");
        let e = open(&p, &InputSpec::default()).err().expect("refused");
        assert_eq!(
            e.reason,
            "compressed as .bz2, which is not read; .gz and .zst are"
        );
    }
}
