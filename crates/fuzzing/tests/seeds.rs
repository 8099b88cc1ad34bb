//! Writes the seed inputs of every target into `fuzz/corpus/<target>/seed-*`: real RESP
//! traffic, and WAL segments, tables and manifests written by the engine, wrapped in each
//! target's input layout (see the target modules). Ignored by default; run it when a layout
//! changes, then let `cargo fuzz cmin` (see `scripts/fuzz.sh --cmin`) merge it into the corpus:
//!
//! ```text
//! cargo test -p rialto-fuzzing --test seeds -- --ignored
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use rialto_engine::{KvEngine, WriteBatch, WriteOptions};
use rialto_io::{Fs, MemFs};
use rialto_lsm::key::{make_internal_key, ValueKind};
use rialto_lsm::sstable::{TableBuildOptions, TableBuilder};
use rialto_lsm::wal::read_segment;
use rialto_lsm::{Compression, Db, Options};
use rialto_resp::{write_request, Protocol, Reply};

fn corpus(target: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    std::fs::create_dir_all(&dir).expect("create the corpus directory");
    dir
}

fn seed(target: &str, name: &str, parts: &[&[u8]]) {
    let path = corpus(target).join(format!("seed-{name}"));
    std::fs::write(&path, parts.concat()).expect("write a seed");
}

/// A database in `MemFs` after a workload that leaves tables in several levels, a manifest
/// with many edits and a WAL segment with unflushed writes.
fn engine_files() -> MemFs {
    let fs = MemFs::new();
    let opts = Options {
        fs: Arc::new(fs.clone()),
        write_buffer_size: 4096,
        block_size: 256,
        target_file_size: 8 << 10,
        max_bytes_for_level_base: 16 << 10,
        level0_compaction_trigger: 2,
        max_open_files: 16,
        compression: Compression::Lz4,
        ..Options::default()
    };
    let db = Db::open("/db", opts).expect("open");
    for i in 0..400u32 {
        let k = format!("key{:04}", i % 150);
        if i % 7 == 3 {
            db.delete(k.as_bytes(), WriteOptions::default())
                .expect("delete");
        } else {
            let mut b = WriteBatch::new();
            b.put(
                k.as_bytes(),
                format!("value-{i}-{}", "x".repeat((i % 40) as usize)).as_bytes(),
            );
            db.write(b, WriteOptions { sync: i % 5 == 0 })
                .expect("write");
        }
    }
    db.flush().expect("flush");
    for i in 0..20u32 {
        db.put(
            format!("tail{i}").as_bytes(),
            b"unflushed",
            WriteOptions::SYNC,
        )
        .expect("put");
    }
    // Dropping without close leaves the WAL as it is.
    drop(db);
    fs
}

fn files_ending(fs: &MemFs, suffix: &str) -> Vec<(String, Vec<u8>)> {
    fs.file_names("/db")
        .into_iter()
        .filter(|n| n.ends_with(suffix) || n.starts_with(suffix))
        .map(|n| {
            let data = fs.read_all(&Path::new("/db").join(&n)).expect("read");
            (n, data)
        })
        .collect()
}

fn number_of(name: &str) -> u8 {
    let digits: String = name.chars().filter(char::is_ascii_digit).collect();
    let n: u64 = digits.parse().expect("a numbered file");
    u8::try_from(n).expect("seed file numbers fit in a byte")
}

#[test]
#[ignore = "writes seed files into fuzz/corpus; run by hand"]
fn write_seeds() {
    resp_seeds();
    let fs = engine_files();
    wal_seeds(&fs);
    sstable_seeds(&fs);
    manifest_seeds(&fs);
    engine_seeds();
}

fn resp_seeds() {
    // Default limits (choice 7 everywhere, pre-authentication off), one read.
    let defaults: &[u8] = &[0x3f, 0x3f, 0x3f, 0x00];
    let mut requests = BytesMut::new();
    write_request(&mut requests, &["SET", "key", "value"]);
    write_request(&mut requests, &["GET", "key"]);
    write_request::<&[u8]>(&mut requests, &[b"HSET", b"h", b"f\r\n\x00", b""]);
    seed("resp_decode", "multibulk", &[defaults, &requests]);
    seed(
        "resp_decode",
        "multibulk-split",
        &[&[0x3f, 0x3f, 0x3f, 0x17], &requests],
    );
    seed(
        "resp_decode",
        "inline",
        &[
            defaults,
            b"PING\r\nSET \"a b\\x41\\n\" 'it\\'s' c\n\r\n  \t\nGET k\r\n",
        ],
    );
    seed(
        "resp_decode",
        "pre-auth",
        &[&[0x3f, 0x3f, 0x52, 0x00], &requests],
    );
    seed(
        "resp_decode",
        "big-bulk-claim",
        &[&[0x36, 0x0e, 0x3f, 0x05], b"*1\r\n$40000\r\nabc"],
    );
    seed(
        "resp_decode",
        "errors",
        &[&[0x02, 0x3f, 0x3f, 0x00], b"*1\r\n:3\r\n"],
    );

    let nested = Reply::Array(vec![
        Reply::simple("OK"),
        Reply::error("ERR bad"),
        Reply::Integer(-42),
        Reply::bulk("bulk\r\ndata"),
        Reply::Null,
        Reply::NullArray,
        Reply::Map(vec![(Reply::bulk("k"), Reply::Double(1.5))]),
        Reply::Set(vec![Reply::Boolean(true), Reply::Double(f64::NAN)]),
        Reply::BigNumber(Bytes::from_static(b"-123456789012345678901234567890")),
        Reply::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"some text"),
        },
        Reply::BlobError(Bytes::from_static(b"SYNTAX x\r\ny")),
        Reply::Push(vec![Reply::bulk("message"), Reply::Double(-0.0)]),
        Reply::Attribute {
            attrs: vec![(Reply::simple("ttl"), Reply::Integer(3600))],
            reply: Box::new(Reply::Double(f64::INFINITY)),
        },
    ]);
    for (name, proto) in [
        ("reply-resp3", Protocol::Resp3),
        ("reply-resp2", Protocol::Resp2),
    ] {
        let mut buf = BytesMut::new();
        nested.encode(proto, &mut buf);
        seed("resp_decode", name, &[defaults, &buf]);
    }
    seed(
        "resp_decode",
        "reply-streamed",
        &[
            defaults,
            b"$?\r\n;3\r\nabc\r\n;0\r\n*?\r\n:1\r\n%?\r\n+a\r\n,1e400\r\n.\r\n.\r\n",
        ],
    );
    seed(
        "resp_decode",
        "reply-deep",
        &[&[0x3f, 0x3f, 0x3b, 0x00], &b"*1\r\n".repeat(70), b"_\r\n"],
    );
}

fn wal_seeds(fs: &MemFs) {
    for (name, data) in files_ending(fs, ".log") {
        let number = number_of(&name);
        seed(
            "wal_reader",
            &format!("raw-{name}"),
            &[&[0, number, 0, 0], &data],
        );
        let mut torn = data.clone();
        torn.truncate(data.len().saturating_sub(3));
        seed(
            "wal_reader",
            &format!("raw-torn-{name}"),
            &[&[0, number, 7, 0], &torn],
        );
        // The same records, structured: number, no zeros, one flipped byte.
        let mut records = Vec::new();
        read_segment(fs, &Path::new("/db").join(&name), u64::from(number), |r| {
            if records.len() < 16 && r.payload.len() < 256 {
                // Bit 0 the kind, bit 1 a sync after the record.
                records.push((r.kind - 1) | 2);
                records.push(r.payload.len() as u8);
                records.extend_from_slice(r.payload);
            }
            Ok(())
        })
        .expect("read a segment");
        seed(
            "wal_reader",
            &format!("structured-{name}"),
            &[&[1, number, 2, 1, 40, 0, 0x10, 0], &records],
        );
    }
}

fn sstable_seeds(fs: &MemFs) {
    for (name, data) in files_ending(fs, ".sst").into_iter().take(4) {
        seed("sstable", &format!("raw-{name}"), &[&[0, 3], &data]);
        seed(
            "sstable",
            &format!("footer-{name}"),
            &[&[1], &data[data.len() - 64..]],
        );
        // The first block of the file: the first data block's contents and trailer.
        seed(
            "sstable",
            &format!("block-{name}"),
            &[&[1], &data[..data.len().min(300)]],
        );
    }
    // Tables built directly, in every compression, with and without filters.
    for (i, compression) in [Compression::None, Compression::Lz4, Compression::Zstd]
        .into_iter()
        .enumerate()
    {
        let mem = MemFs::new();
        mem.create_dir_all(Path::new("/t")).expect("mkdir");
        let file = mem.create(Path::new("/t/1.sst")).expect("create");
        let mut b = TableBuilder::new(
            file,
            "1.sst".into(),
            TableBuildOptions {
                block_size: 128,
                block_restart_interval: 4,
                bloom_bits_per_key: 10,
                compression,
                cl_segment: None,
            },
        );
        for k in 0..60u32 {
            let key = make_internal_key(
                format!("k{k:03}").as_bytes(),
                100 - u64::from(k),
                ValueKind::Put,
            );
            b.add(&key, &[b'a' + (k % 26) as u8; 40]).expect("add");
        }
        b.finish().expect("finish");
        let data = mem.read_all(Path::new("/t/1.sst")).expect("read");
        seed("sstable", &format!("built-{i}"), &[&[0, 1], &data]);
    }
    // Structured: options (restart 4, bloom, LZ4), block size, one flipped byte, entries.
    let mut entries = Vec::new();
    for k in 0..40u8 {
        entries.extend_from_slice(&[3, b'k', b'0' + k / 10, b'0' + k % 10, k, 0, (k % 2) * 2]);
        if k % 2 == 0 {
            entries.extend_from_slice(&[5, b'v', b'a', b'l', b'u', b'e']);
        }
    }
    seed(
        "sstable",
        "structured",
        &[&[2, 0x33, 8, 1, 100, 0, 0x01], &entries],
    );
    seed(
        "sstable",
        "structured-intact",
        &[&[2, 0x51, 2, 0, 0, 0, 0], &entries],
    );
}

fn manifest_seeds(fs: &MemFs) {
    for (name, data) in files_ending(fs, "MANIFEST-") {
        let number = number_of(&name);
        seed(
            "manifest",
            &format!("raw-{name}"),
            &[&[1, number, 5], &data],
        );
        let mut framed = vec![2, number, 5, 0, 0];
        read_segment(fs, &Path::new("/db").join(&name), u64::from(number), |r| {
            let p = r.payload;
            if p.len() < 256 {
                seed("manifest", &format!("edit-{}", framed.len()), &[&[0], p]);
                framed.push(0);
                framed.push(p.len() as u8);
                framed.extend_from_slice(p);
            }
            Ok(())
        })
        .expect("read the manifest");
        seed("manifest", &format!("framed-{name}"), &[&framed]);
    }
}

fn engine_seeds() {
    // Opcodes (see `Harness::step`): 0 put, 3 delete, 4 batch, 5 get, 6/7 scans, 8 seek,
    // 9 snapshot, 11 flush, 12 compact, 13 reopen, 14 crash, 15 sync; bit 7 of put = sync.
    let mut ops: Vec<u8> = vec![0x00];
    for i in 0..40u8 {
        ops.extend_from_slice(&[0, i, 0x90]);
    }
    ops.extend_from_slice(&[9, 3, 5, 5, 6, 3, 2, 40, 0, 7, 0, 0, 0, 1]);
    ops.extend_from_slice(&[11, 4, 3, 1, 10, 2, 0, 3, 0x45, 0x80, 7, 12, 0, 0, 0]);
    ops.extend_from_slice(&[
        8, 3, 1, 50, 9, 0x5a, 13, 5, 7, 0x80, 9, 0x41, 14, 6, 0, 0, 0, 0,
    ]);
    seed("engine_ops", "mixed", &[&ops]);
    let mut crashy: Vec<u8> = vec![0xd5];
    for i in 0..60u8 {
        crashy.extend_from_slice(&[if i % 9 == 0 { 0x80 } else { 1 }, i.wrapping_mul(37), 0xc1]);
        if i % 20 == 19 {
            crashy.push(14);
        }
    }
    crashy.extend_from_slice(&[15, 3, 0xa0, 14, 7, 0, 0, 0, 0]);
    seed("engine_ops", "crashes", &[&crashy]);
}
