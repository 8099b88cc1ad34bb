//! The key-level view commands work on: records with Redis expiry semantics over either the
//! engine's published state (reads on the connection) or a merger transaction (writes, and
//! reads ordered behind this connection's pending writes).

use bytes::Bytes;
use rialto_engine::{KvEngine, PipelinedCommit};
use rialto_lsm::Db;
use rialto_resp::Reply;
use rialto_txn::TxnContext;

use crate::keyspace::{self, encode_record, Record};
use crate::reply::{self, CmdResult};

/// Raw engine reads.
pub trait RawRead {
    /// The engine value of `key`.
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>>;
}

/// Raw engine writes, staged in a transaction.
pub trait RawWrite: RawRead {
    /// Stages `key = value`.
    fn put_raw(&mut self, key: &[u8], value: &[u8]);
    /// Stages the deletion of `key`.
    fn delete_raw(&mut self, key: &[u8]);
}

/// Reads the engine's published state: what every acknowledged write left.
pub struct Published<'a>(pub &'a Db);

impl RawRead for Published<'_> {
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>> {
        self.0.get(key)
    }
}

/// A merger transaction: reads see every earlier transaction, writes are staged.
pub struct Txn<'a, 'b, E: PipelinedCommit>(pub &'a mut TxnContext<'b, E>);

impl<E: PipelinedCommit> RawRead for Txn<'_, '_, E> {
    fn get_raw(&mut self, key: &[u8]) -> rialto_engine::Result<Option<Bytes>> {
        self.0.get(key)
    }
}

impl<E: PipelinedCommit> RawWrite for Txn<'_, '_, E> {
    fn put_raw(&mut self, key: &[u8], value: &[u8]) {
        self.0.put(key, value)
    }
    fn delete_raw(&mut self, key: &[u8]) {
        self.0.delete(key)
    }
}

/// Keys of one database at one instant.
pub struct Keys<'a, T: ?Sized> {
    /// Where records are read (and written).
    pub io: &'a mut T,
    /// Database index (SELECT).
    pub db: u8,
    /// The instant expiry is judged against, Unix milliseconds.
    pub now_ms: i64,
}

impl<T: RawRead + ?Sized> Keys<'_, T> {
    /// The live record of `key`: `None` if absent or expired.
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Record>, Reply> {
        if key.len() > keyspace::MAX_USER_KEY_LEN {
            // Could never have been written.
            return Ok(None);
        }
        let raw = self
            .io
            .get_raw(&keyspace::data_key(self.db, key))
            .map_err(|e| reply::engine_error(&e))?;
        let Some(raw) = raw else {
            return Ok(None);
        };
        let rec = Record::decode(raw).map_err(|e| reply::err_string(format!("ERR {e}")))?;
        Ok((!rec.expired(self.now_ms)).then_some(rec))
    }

    /// Whether `key` exists (and is not expired).
    pub fn exists(&mut self, key: &[u8]) -> Result<bool, Reply> {
        Ok(self.get(key)?.is_some())
    }
}

impl<T: RawWrite + ?Sized> Keys<'_, T> {
    /// Writes `key = value` with the given expiry (`None`: persistent).
    pub fn set(&mut self, key: &[u8], value: &[u8], expire_at_ms: Option<i64>) {
        self.io.put_raw(
            &keyspace::data_key(self.db, key),
            &encode_record(expire_at_ms, value),
        );
        if let Some(at) = expire_at_ms {
            self.io
                .put_raw(&keyspace::expiry_key(self.db, at, key), b"");
        }
    }

    /// Deletes `key` without reading it (a stale expiry key is left to the expiry pass).
    pub fn delete(&mut self, key: &[u8]) {
        self.io.delete_raw(&keyspace::data_key(self.db, key));
    }

    /// Deletes `key` and reports whether it existed.
    pub fn remove(&mut self, key: &[u8]) -> Result<bool, Reply> {
        let existed = self.get(key)?;
        if let Some(rec) = &existed {
            self.delete(key);
            if let Some(at) = rec.expire_at_ms {
                self.io.delete_raw(&keyspace::expiry_key(self.db, at, key));
            }
        }
        Ok(existed.is_some())
    }

    /// Replaces `key`'s record, dropping the old record's expiry key when its time changes.
    pub fn replace(&mut self, key: &[u8], old: Option<&Record>, value: &[u8], at: Option<i64>) {
        if let Some(old_at) = old.and_then(|r| r.expire_at_ms) {
            if Some(old_at) != at {
                self.io
                    .delete_raw(&keyspace::expiry_key(self.db, old_at, key));
            }
        }
        self.set(key, value, at);
    }
}

/// Validates a user key's length against the engine's limit.
pub fn check_key(key: &[u8]) -> CmdResult<()> {
    if key.len() > keyspace::MAX_USER_KEY_LEN {
        return Err(reply::err_string(format!(
            "ERR key is {} bytes, longer than Rialto's limit of {} bytes",
            key.len(),
            keyspace::MAX_USER_KEY_LEN
        )));
    }
    Ok(())
}

/// Validates a value's length (Redis's string limit is `proto-max-bulk-len`; the engine's is
/// 512 MiB minus the record header).
pub fn check_value_len(len: usize) -> CmdResult<()> {
    if len > keyspace::MAX_USER_VALUE_LEN {
        return Err(Reply::error(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}
