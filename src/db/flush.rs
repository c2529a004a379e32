//! Flush: the in-memory table is frozen, writes move to a new WAL file, and the frozen table
//! becomes a segment (signatures included), published by a new manifest whose WAL start
//! drops the old WAL (`format/commit.md`, "Flush"). Queries go on meanwhile: they read the
//! frozen table until the new version is installed.

use std::sync::Arc;

use super::Db;
use super::commit::{LiveDoc, NewDocs, NewWal, Records};
use super::memtable::MemTable;
use crate::storage::names;
use crate::storage::wal::WalWriter;
use crate::{Error, Result};

impl Db {
    pub(super) fn maybe_flush(&self) -> Result<()> {
        let big = self.state.read().mem.approx_bytes() >= self.opts.memtable_bytes;
        if big { self.flush() } else { Ok(()) }
    }

    /// Writes the in-memory table to a new segment and makes it (and every write before this
    /// call) durable. Queries continue meanwhile.
    pub fn flush(&self) -> Result<()> {
        self.check_writable()?;
        let _maint = self.maintenance.lock();
        self.check_writable()?;
        let Some((frozen, new_wal)) = self.freeze()? else {
            return Ok(());
        };
        match self.write_flush(&frozen, new_wal) {
            Ok(()) => Ok(()),
            Err(e) => self.fail(e),
        }?;
        // Committed: what follows is upkeep.
        self.after_commit(self.upkeep())
    }

    /// Freezes the in-memory table (queries go on reading it) and moves writes to a new WAL
    /// file, with no writer in between; `None` when the table is empty.
    fn freeze(&self) -> Result<Option<(Arc<MemTable>, NewWal)>> {
        let _order = self.sequencer.lock();
        if self.state.read().mem.is_empty() {
            return Ok(None);
        }
        let new_wal = self.switch_wal()?;
        let mut state = self.state.write();
        let next = state.mem.next_docno();
        let fresh = MemTable::new(next, self.params.lsh.bands, self.params.sig_bytes());
        let frozen = Arc::new(std::mem::replace(&mut state.mem, fresh));
        state.imm = Some(frozen.clone());
        Ok(Some((frozen, new_wal)))
    }

    /// Makes everything queued durable in the WAL file being written, seals it, and moves
    /// writing to a new one (under the sequencer).
    fn switch_wal(&self) -> Result<NewWal> {
        // Everything queued goes into the old WAL, durably; then the zeros written ahead of
        // its records are cut off (only the newest WAL may end in anything else).
        let seq = self.group_commit.last_queued()?;
        self.sync_wal_through(seq)?;
        if let Some(old) = self.group_commit.writer()
            && let Err(e) = old.seal()
        {
            return self.fail(e);
        }
        let id = self.new_file_id();
        let path = self.dir.join(names::wal_name(id));
        let first_seq = self.group_commit.next_seq();
        let writer =
            match WalWriter::create(self.vfs.as_ref(), &path, first_seq, self.db_id.file(id)) {
                Ok(w) => w,
                Err(e) => return self.fail(e),
            };
        if let Err(e) = self.vfs.sync_dir(&self.dir) {
            return self.fail(Error::io(&self.dir, "fsync directory", e));
        }
        self.group_commit.switch_to(id, writer);
        Ok(NewWal { id, first_seq })
    }

    fn write_flush(&self, imm: &MemTable, new_wal: NewWal) -> Result<()> {
        let record_bytes = self.params.sig_bytes();
        // The signatures, by position in the docno range (dead documents' included: only the
        // live documents' records are read).
        let all = imm.all_signatures();
        let fill = |i: usize, out: &mut [u8]| -> Result<()> {
            let sig = all
                .get(i * record_bytes..(i + 1) * record_bytes)
                .ok_or_else(|| {
                    Error::invalid(
                        "records",
                        format!("no record for document {}", imm.base + i as u64),
                    )
                })?;
            out.copy_from_slice(sig);
            Ok(())
        };
        let input = NewDocs {
            base: imm.base,
            span: imm.len() as u64,
            records: Records::Lazy(&fill),
            live: imm
                .live_docs()
                .map(|(docno, doc)| LiveDoc {
                    docno,
                    key: doc.key,
                    band_keys: doc.band_keys,
                    set: doc.set,
                    columns: doc.columns,
                })
                .collect(),
            deleted_older: imm.deleted_older.iter().copied().collect(),
        };
        self.publish_new_docs(&input, Some(new_wal), |state| state.imm = None)
    }
}
