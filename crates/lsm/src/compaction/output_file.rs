//! The file under a table being written by a flush, a compaction or an ingestion: paced
//! behind the journal, written back as it goes, and (for an ingestion) kept out of the
//! operating system's page cache beyond a budget.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rialto_engine::{Error, Result};
use rialto_io::{Fs, WritableFile};

use crate::sstable::{TableBuildOptions, TableBuilder};
use crate::throttle::JournalFirst;
use crate::version::table_file_name;

/// Table bytes that the tables of one ingestion may still leave in the page cache, shared by
/// all of them; once spent, each further table's pages are dropped as they reach the disk.
#[derive(Debug)]
pub(crate) struct CacheBudget {
    left: AtomicU64,
}

impl CacheBudget {
    pub fn new(bytes: u64) -> Self {
        CacheBudget {
            left: AtomicU64::new(bytes),
        }
    }

    /// Takes `n` bytes if that many are left. Otherwise spends the rest and returns false:
    /// the table that ran out drops its pages (also those it was granted), and so does every
    /// later one, so the cached part is the first tables, within the budget.
    pub fn take(&self, n: u64) -> bool {
        let r = self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                Some(left.saturating_sub(n))
            });
        matches!(r, Ok(left) if left >= n)
    }

    /// Nothing is left: later tables keep no page cached.
    pub fn spent(&self) -> bool {
        self.left.load(Ordering::Relaxed) == 0
    }
}

/// How an output file is written.
#[derive(Default, Clone)]
pub(crate) struct OutputPolicy {
    /// Paces writes and background syncs when journal syncs slow down; `None` writes at
    /// full speed.
    pub throttle: Option<Arc<JournalFirst>>,
    /// Start write-back every this many bytes (0: never, the final sync writes all).
    pub bytes_per_sync: u64,
    /// At each write-back, also wait for the previous one to finish
    /// (`WritableFile::write_back_behind`), so that little of the table is in flight when a
    /// journal commit comes. For flushes and compactions. Not for batch ingestion, whose
    /// throughput is the point: waiting made a push's table writing 40% slower (1.8 s against
    /// 2.6 s for 10M × 100 B), as the disk writes back buffered pages more slowly than a push
    /// fills them.
    pub wait_behind: bool,
    /// Page-cache budget; `None` leaves every page cached.
    pub cache: Option<Arc<CacheBudget>>,
}

/// An output file whose writes are paced by [`JournalFirst`], whose dirty pages are sent to
/// disk every `bytes_per_sync` (so a compaction never floods the disk queue in front of the
/// journal's syncs), and whose pages leave the page cache once its budget is spent.
struct OutputFile {
    inner: Box<dyn WritableFile>,
    policy: OutputPolicy,
    unsynced: u64,
    /// File length at the previous write-back request: the pages before it were handed to
    /// the disk one interval ago and are likely clean by now.
    written_back: u64,
    /// The budget ran out: every page of this file leaves the cache once written.
    dropping: bool,
}

impl OutputFile {
    /// Charges the `unsynced` bytes to the budget; once it runs out, this file drops pages.
    fn charge_unsynced(&mut self) {
        let n = std::mem::take(&mut self.unsynced);
        if let Some(budget) = &self.policy.cache {
            if !self.dropping && !budget.take(n) {
                self.dropping = true;
            }
        }
    }

    fn interval_done(&mut self) -> std::io::Result<()> {
        self.charge_unsynced();
        if self.policy.wait_behind {
            self.inner.write_back_behind()?;
        } else {
            self.inner.start_writeback()?;
        }
        if self.dropping {
            // Lags one interval: the pages just handed over are still being written.
            self.inner.drop_cache(self.written_back)?;
        }
        self.written_back = self.inner.len();
        Ok(())
    }

    /// Runs `sync` on the inner file (as a background sync when paced), then charges the
    /// rest of the file and drops its pages if the budget is spent: every page is clean now.
    fn sync_with(
        &mut self,
        sync: fn(&mut dyn WritableFile) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let inner = &mut *self.inner;
        match &self.policy.throttle {
            Some(t) => t.background_sync(|| sync(inner))?,
            None => sync(inner)?,
        }
        self.charge_unsynced();
        if self.dropping {
            self.inner.drop_cache(self.inner.len())?;
        }
        Ok(())
    }
}

impl WritableFile for OutputFile {
    fn append(&mut self, data: &[u8]) -> std::io::Result<()> {
        if let Some(t) = &self.policy.throttle {
            t.acquire(data.len() as u64);
        }
        self.inner.append(data)?;
        self.unsynced += data.len() as u64;
        let every = self.policy.bytes_per_sync;
        if every > 0 && self.unsynced >= every {
            self.interval_done()?;
        }
        Ok(())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        self.sync_with(|f| f.sync_data())
    }
    fn sync_all(&mut self) -> std::io::Result<()> {
        self.sync_with(|f| f.sync_all())
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

/// Creates table file `number` in `dir` with a builder over it, written as `policy` says.
pub(crate) fn create_table(
    fs: &dyn Fs,
    dir: &Path,
    number: u64,
    policy: &OutputPolicy,
    opts: TableBuildOptions,
) -> Result<TableBuilder> {
    let name = table_file_name(number);
    let path = dir.join(&name);
    // Once the budget is spent, nothing of the table stays cached: written around the page
    // cache, it also skips the copy into fresh pages and their write-back (design §3.2).
    let file = if policy.cache.as_ref().is_some_and(|b| b.spent()) {
        fs.create_direct(&path)
    } else {
        fs.create(&path)
    };
    let file = file.map_err(|e| Error::io(format!("create table {name}"), e))?;
    let plain = policy.throttle.is_none() && policy.cache.is_none();
    let file: Box<dyn WritableFile> = if plain {
        file
    } else {
        Box::new(OutputFile {
            inner: file,
            policy: policy.clone(),
            unsynced: 0,
            written_back: 0,
            dropping: false,
        })
    };
    Ok(TableBuilder::new(file, name, opts))
}

#[cfg(test)]
mod tests {
    use std::io;

    use parking_lot::Mutex;

    use super::*;

    /// What a file was asked to do.
    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Call {
        Writeback(u64),
        Drop(u64),
        Sync(u64),
    }

    /// An in-memory file that records write-back, drop and sync requests with its length.
    struct Recorder {
        len: u64,
        calls: Arc<Mutex<Vec<Call>>>,
    }

    impl WritableFile for Recorder {
        fn append(&mut self, data: &[u8]) -> io::Result<()> {
            self.len += data.len() as u64;
            Ok(())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&mut self) -> io::Result<()> {
            self.calls.lock().push(Call::Sync(self.len));
            Ok(())
        }
        fn sync_all(&mut self) -> io::Result<()> {
            self.sync_data()
        }
        fn start_writeback(&mut self) -> io::Result<()> {
            self.calls.lock().push(Call::Writeback(self.len));
            Ok(())
        }
        fn drop_cache(&mut self, end: u64) -> io::Result<()> {
            self.calls.lock().push(Call::Drop(end));
            Ok(())
        }
        fn len(&self) -> u64 {
            self.len
        }
    }

    /// Writes `chunks` appends of 100 bytes through an output file with write-back every
    /// 250 bytes and `budget`, syncs, and returns the calls the file saw.
    fn write(budget: Option<&Arc<CacheBudget>>, chunks: usize) -> Vec<Call> {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let mut f = OutputFile {
            inner: Box::new(Recorder {
                len: 0,
                calls: Arc::clone(&calls),
            }),
            policy: OutputPolicy {
                throttle: None,
                bytes_per_sync: 250,
                wait_behind: false,
                cache: budget.cloned(),
            },
            unsynced: 0,
            written_back: 0,
            dropping: false,
        };
        for _ in 0..chunks {
            f.append(&[7; 100]).unwrap();
        }
        f.sync_data().unwrap();
        let c = calls.lock().clone();
        c
    }

    #[test]
    fn within_the_budget_pages_stay_cached() {
        use Call::*;
        let budget = Arc::new(CacheBudget::new(1000));
        let calls = write(Some(&budget), 10);
        assert_eq!(
            calls,
            [Writeback(300), Writeback(600), Writeback(900), Sync(1000)]
        );
        assert!(!budget.take(1), "the whole budget is spent");
        assert_eq!(write(None, 3), [Writeback(300), Sync(300)]);
    }

    #[test]
    fn beyond_the_budget_pages_are_dropped_one_interval_behind_and_all_after_the_sync() {
        use Call::*;
        let calls = write(Some(&Arc::new(CacheBudget::new(500))), 10);
        assert_eq!(
            calls,
            [
                Writeback(300),
                Writeback(600),
                // The budget ran out here: what was handed to the disk before is dropped.
                Drop(300),
                Writeback(900),
                Drop(600),
                Sync(1000),
                Drop(1000),
            ]
        );
        let none = write(Some(&Arc::new(CacheBudget::new(0))), 3);
        assert_eq!(none, [Writeback(300), Drop(0), Sync(300), Drop(300)]);
    }

    #[test]
    fn one_budget_serves_every_table_of_an_ingestion() {
        use Call::*;
        let budget = Arc::new(CacheBudget::new(400));
        // The first table fits; its final 100 bytes are counted at its sync.
        assert_eq!(write(Some(&budget), 4), [Writeback(300), Sync(400)]);
        assert_eq!(
            write(Some(&budget), 2),
            [Sync(200), Drop(200)],
            "the second table is past the budget"
        );
    }
}
