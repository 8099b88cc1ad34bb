//! A write observer: sees every write a transaction stages, with the value it replaces, so
//! that figures derived from the data (how many keys exist) move in step with it and are
//! logged in the same group.
//!
//! Calls come from the one thread executing groups at a time, in execution order:
//! `staged` for each observed write, then `committed` if the transaction's writes join its
//! group or `cut` back to a `mark` if some or all of them are dropped; at the end of each
//! group that executed a transaction, `group_writes` gives what to stage with it.

/// See the module docs.
pub trait WriteObserver: Send + Sync {
    /// Whether writes of `key` are observed (a cheap test: it runs for every write).
    fn observes(&self, key: &[u8]) -> bool;
    /// The running transaction stages `key` going from `old` to `new` (`None`: absent). A
    /// value staged in parts is seen by its first part only: observers judge by a value's head.
    fn staged(&self, key: &[u8], old: Option<&[u8]>, new: Option<&[u8]>);
    /// Where the running transaction's observed writes end now.
    fn mark(&self) -> usize;
    /// Forgets the running transaction's observed writes after `mark`.
    fn cut(&self, mark: usize);
    /// The running transaction's observed writes join its group.
    fn committed(&self);
    /// Writes logged at the end of the group, after its transactions, not observed: a key
    /// and its value, or `None` to delete it.
    fn group_writes(&self) -> Vec<(Vec<u8>, Option<Vec<u8>>)>;
}
