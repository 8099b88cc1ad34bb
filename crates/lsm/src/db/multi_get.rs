//! Batch point lookups: many keys read at one sequence from one super version, each source
//! visited once for all the keys still undecided when the search reaches it.
//!
//! A batch answers what `get` of each key at the same sequence answers. It shares work that
//! single gets repeat: the super version is loaded once; keys go through the sources in
//! ascending order, so a level's files are found by one sweep instead of a binary search per
//! key, and within a table the bloom probes' cache lines are all requested before the first
//! is tested and keys that fall in one data block read it once (`TableReader::multi_get`).

use bytes::Bytes;
use rialto_engine::Result;

use super::DbInner;
use crate::key::{self, SequenceNumber, KIND_SEEK};
use crate::memtable::Lookup;
use crate::sstable::BlockFill;
use crate::version::FileMeta;

impl DbInner {
    /// The value of each of `keys` (duplicates allowed) at sequence `seq`.
    pub(super) fn multi_get_at_seq(
        &self,
        keys: &[&[u8]],
        seq: SequenceNumber,
        fill: BlockFill,
    ) -> Result<Vec<Option<Bytes>>> {
        let sv = self.sv.load();
        let mut out = vec![Lookup::Absent; keys.len()];
        // Undecided keys, ascending, each distinct key once (`same[i]`: the index a
        // duplicate takes its answer from).
        let mut pending: Vec<usize> = (0..keys.len()).collect();
        pending.sort_by(|&a, &b| keys[a].cmp(keys[b]).then(a.cmp(&b)));
        let mut same: Vec<(usize, usize)> = Vec::new();
        pending.dedup_by(|later, first| {
            let dup = keys[*later] == keys[*first];
            if dup {
                same.push((*later, *first));
            }
            dup
        });

        for m in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
            pending.retain(|&i| match m.get(keys[i], seq) {
                Lookup::Absent => true,
                found => {
                    out[i] = found;
                    false
                }
            });
            if pending.is_empty() {
                break;
            }
        }

        if !pending.is_empty() {
            // Every key's internal seek key, back to back.
            let mut buf = Vec::new();
            let mut at = vec![(0usize, 0usize); keys.len()];
            for &i in &pending {
                let start = buf.len();
                key::append_internal_key(&mut buf, keys[i], seq, KIND_SEEK);
                at[i] = (start, buf.len());
            }
            let lookups_of = |group: &[usize]| -> Vec<&[u8]> {
                group.iter().map(|&i| &buf[at[i].0..at[i].1]).collect()
            };
            let mut decided = vec![false; keys.len()];

            // Level 0: files may overlap, newest first; each takes the keys in its range.
            for f in &sv.version.levels[0] {
                let group: Vec<usize> = pending
                    .iter()
                    .copied()
                    .filter(|&i| f.smallest_user() <= keys[i] && keys[i] <= f.largest_user())
                    .collect();
                if group.is_empty() {
                    continue;
                }
                self.probe_table(f, &group, &lookups_of(&group), fill, &mut out, &mut decided)?;
                pending.retain(|&i| !decided[i]);
                if pending.is_empty() {
                    break;
                }
            }

            // Deeper levels: sorted, disjoint files; one sweep pairs keys with files.
            for files in &sv.version.levels[1..] {
                if pending.is_empty() {
                    break;
                }
                let mut g = 0;
                while g < pending.len() {
                    let first = keys[pending[g]];
                    let fi = files.partition_point(|f| f.largest_user() < first);
                    let Some(f) = files.get(fi) else {
                        break;
                    };
                    let mut e = g;
                    while e < pending.len() && keys[pending[e]] <= f.largest_user() {
                        e += 1;
                    }
                    let group: Vec<usize> = pending[g..e]
                        .iter()
                        .copied()
                        .filter(|&i| f.smallest_user() <= keys[i])
                        .collect();
                    if !group.is_empty() {
                        let lookups = lookups_of(&group);
                        self.probe_table(f, &group, &lookups, fill, &mut out, &mut decided)?;
                    }
                    g = e;
                }
                pending.retain(|&i| !decided[i]);
            }
        }

        for (dup, first) in same {
            out[dup] = out[first].clone();
        }
        Ok(out
            .into_iter()
            .map(|l| match l {
                Lookup::Found(v) => Some(v),
                Lookup::Deleted | Lookup::Absent => None,
            })
            .collect())
    }

    /// Looks the keys `group` (indexes into `out`, their seek keys `lookups`, ascending) up
    /// in table `f`, marking those it decides.
    fn probe_table(
        &self,
        f: &FileMeta,
        group: &[usize],
        lookups: &[&[u8]],
        fill: BlockFill,
        out: &mut [Lookup],
        decided: &mut [bool],
    ) -> Result<()> {
        self.tables.multi_get(f, lookups, fill, |j, l| {
            let i = group[j];
            out[i] = l;
            decided[i] = true;
        })
    }
}
