//! Group commit: write batches queue their WAL payloads here, and one writer at a time (the
//! leader) writes everything queued as one WAL record and fsyncs it, so that concurrent
//! writers share one fsync. `format/commit.md` ("Write path") argues why a crash can tear at
//! most that one record.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::options::Durability;
use crate::storage::wal::batch::combine_payloads;
use crate::storage::wal::{MAX_RECORD_LEN, WalWriter};
use crate::{Error, Result};

/// How long a leader waits for writers that are preparing a batch to queue it.
const GATHER: Duration = Duration::from_micros(100);

/// Without per-write sync, queued payloads are written (and synced) once they reach this size,
/// so memory stays bounded.
const UNSYNCED_QUEUE_LIMIT: usize = 4 << 20;

/// The WAL file being written and the queue in front of it.
struct WalState {
    id: u64,
    writer: WalWriter,
    /// Payloads appended (and applied) but not yet handed to the WAL writer, in queue order
    /// (the last one is number `queued_seq`).
    pending: Vec<Vec<u8>>,
    /// Queue number of the last payload queued.
    queued_seq: u64,
    /// Queue number up to which the WAL is durable.
    synced_seq: u64,
    /// Whether some thread is writing and syncing right now.
    syncing: bool,
    /// Batches in the previous group commit: how many writers a leader expects to gather.
    last_group: usize,
}

/// The WAL of a writable handle (none for a read-only one) and the group-commit bookkeeping.
pub(super) struct GroupCommit {
    wal: Mutex<Option<WalState>>,
    /// Signalled when a leader finishes writing and syncing.
    synced: Condvar,
    /// Signalled when a payload is queued (a leader may be gathering).
    queued: Condvar,
    /// Writers between the start of `write` and queueing their payload.
    preparing: AtomicUsize,
}

/// Counts a writer as preparing until dropped (also on early returns).
pub(super) struct Preparing<'a>(&'a AtomicUsize);

impl Drop for Preparing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl GroupCommit {
    /// No WAL: every write is refused with [`Error::ReadOnly`].
    pub(super) fn read_only() -> Self {
        Self::with(None)
    }

    /// Writes go to `writer` (file id `id`); `last_seq` is the last queue number already
    /// durable (the replayed WAL's last record).
    pub(super) fn new(id: u64, writer: WalWriter, last_seq: u64) -> Self {
        Self::with(Some(WalState::new(id, writer, last_seq)))
    }

    fn with(wal: Option<WalState>) -> Self {
        GroupCommit {
            wal: Mutex::new(wal),
            synced: Condvar::new(),
            queued: Condvar::new(),
            preparing: AtomicUsize::new(0),
        }
    }

    /// Marks a writer as preparing a batch, until the returned guard is dropped: a leader
    /// that sees one waits (briefly) for its payload to join the group.
    pub(super) fn preparing(&self) -> Preparing<'_> {
        self.preparing.fetch_add(1, Ordering::SeqCst);
        Preparing(&self.preparing)
    }

    /// Queues an encoded batch and ends its writer's preparing; returns its queue number.
    pub(super) fn queue(&self, payload: Vec<u8>, preparing: Preparing<'_>) -> Result<u64> {
        let seq = {
            let mut wal = self.wal.lock();
            let Some(w) = wal.as_mut() else {
                return Err(Error::ReadOnly);
            };
            w.queued_seq += 1;
            w.pending.push(payload);
            w.queued_seq
        };
        // No longer preparing, then wake a gathering leader: in the other order it would wake,
        // still count this writer as preparing, and wait out its deadline.
        drop(preparing);
        self.queued.notify_all();
        Ok(seq)
    }

    /// The queue number of the last payload queued.
    pub(super) fn last_queued(&self) -> Result<u64> {
        self.wal
            .lock()
            .as_ref()
            .map(|w| w.queued_seq)
            .ok_or(Error::ReadOnly)
    }

    /// The sequence number the next WAL record will carry (a new WAL file's `first_seq`).
    pub(super) fn next_seq(&self) -> u64 {
        self.wal.lock().as_ref().map_or(1, |w| w.writer.next_seq())
    }

    /// The id of the WAL file being written.
    pub(super) fn wal_id(&self) -> Option<u64> {
        self.wal.lock().as_ref().map(|w| w.id)
    }

    /// The writer of the WAL file being written.
    pub(super) fn writer(&self) -> Option<WalWriter> {
        self.wal.lock().as_ref().map(|w| w.writer.clone())
    }

    /// Writes queued payloads and fsyncs until `seq` is durable; concurrent callers share one
    /// write + fsync. `failed` is the handle's sticky I/O failure: once set, nothing is written.
    /// An error here must be latched into `failed` by the caller.
    pub(super) fn sync_through(
        &self,
        seq: u64,
        durability: Durability,
        failed: &AtomicBool,
    ) -> Result<()> {
        let mut guard = self.wal.lock();
        loop {
            let Some(w) = guard.as_mut() else {
                return Err(Error::ReadOnly);
            };
            if w.synced_seq >= seq {
                return Ok(());
            }
            // A group being written may hold this batch: its outcome is this batch's, even if
            // the handle failed meanwhile (an upkeep failure latched by another thread).
            if w.syncing {
                self.synced.wait(&mut guard);
                continue;
            }
            if failed.load(Ordering::SeqCst) {
                return Err(Error::previous_io_unknown());
            }
            // Become the leader. Writers that are about to queue join this group if they do so
            // within a fraction of an fsync (group commit); then write outside the lock.
            w.syncing = true;
            let deadline = Instant::now() + GATHER;
            while durability == Durability::Sync
                && guard.as_ref().is_some_and(|w| {
                    self.preparing.load(Ordering::SeqCst) > 0 || w.pending.len() < w.last_group
                })
            {
                if self.queued.wait_until(&mut guard, deadline).timed_out() {
                    break;
                }
            }
            let Some(w) = guard.as_mut() else {
                return Err(Error::ReadOnly);
            };
            let batch = std::mem::take(&mut w.pending);
            w.last_group = batch.len().max(1);
            let through = w.queued_seq;
            let writer = w.writer.clone();
            drop(guard);
            // One record for the whole group: a crash can then tear only that record.
            let records = combine_payloads(batch.iter().map(Vec::as_slice), MAX_RECORD_LEN);
            let result = writer.append_all_and_sync(records.iter().map(|r| r.as_ref()));
            guard = self.wal.lock();
            if let Some(w) = guard.as_mut() {
                w.syncing = false;
                if result.is_ok() {
                    w.synced_seq = w.synced_seq.max(through);
                }
            }
            self.synced.notify_all();
            result?;
        }
    }

    /// Without per-write sync, hands a large queue to the WAL now, so memory stays bounded.
    /// It is synced too (one fsync per 4 MiB of batches), since the WAL never holds more than
    /// one unsynced record. An error here must be latched by the caller.
    pub(super) fn write_if_large(&self) -> Result<()> {
        let mut guard = self.wal.lock();
        let Some(w) = guard.as_mut() else {
            return Ok(());
        };
        let queued: usize = w.pending.iter().map(Vec::len).sum();
        if queued < UNSYNCED_QUEUE_LIMIT || w.syncing {
            return Ok(());
        }
        let batch = std::mem::take(&mut w.pending);
        let records = combine_payloads(batch.iter().map(Vec::as_slice), MAX_RECORD_LEN);
        w.writer
            .append_all_and_sync(records.iter().map(|r| r.as_ref()))
    }

    /// Moves writing to a new WAL file (a flush, once everything queued is durable in the old
    /// one). Record sequence numbers continue across files; queue numbers (one per batch,
    /// several batches per record) continue in memory.
    pub(super) fn switch_to(&self, id: u64, writer: WalWriter) {
        let mut wal = self.wal.lock();
        let old = wal.take();
        let queued = old.as_ref().map_or(0, |w| w.queued_seq);
        *wal = Some(WalState::new(id, writer, queued));
    }

    /// Cuts the zeros written ahead of the WAL's records off (on close), so that the next
    /// open finds whole records only. Batches still queued were never acknowledged as durable
    /// and are not written. Sealing again does nothing.
    pub(super) fn seal(&mut self) -> crate::Result<()> {
        match self.wal.get_mut() {
            Some(w) => w.writer.seal(),
            None => Ok(()),
        }
    }
}

impl WalState {
    fn new(id: u64, writer: WalWriter, durable_seq: u64) -> Self {
        WalState {
            id,
            writer,
            pending: Vec::new(),
            queued_seq: durable_seq,
            synced_seq: durable_seq,
            syncing: false,
            last_group: 1,
        }
    }
}
