//! What a caller chooses per open handle: durability and maintenance settings (nothing here is
//! stored in the database).

/// When a write becomes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every [`Db::write`](super::Db::write) returns only after its WAL record is on stable storage; concurrent
    /// writers share one fsync (group commit).
    #[default]
    Sync,
    /// Writes return at once; [`Db::commit`](super::Db::commit) (or a flush) makes everything before it durable.
    /// For bulk loads.
    None,
}

/// Options that apply to one open handle (not stored in the database).
#[derive(Clone, Debug)]
pub struct Options {
    /// When writes become durable.
    pub durability: Durability,
    /// Flush the in-memory table to a segment when it holds about this many bytes.
    pub memtable_bytes: usize,
    /// Merge segments automatically after a flush, by the log merge policy.
    pub auto_compact: bool,
    /// How many segments of one size class trigger a merge.
    pub merge_factor: usize,
    /// If set, opening fails with [`Error::ParameterMismatch`](crate::Error::ParameterMismatch) unless the stored signature
    /// parameters (scheme, k, seed, shingling) equal these: a caller that signs documents
    /// itself states what it signs with, and never mixes incompatible signatures.
    pub expect_sketch: Option<crate::sketch::SketchParams>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::Sync,
            memtable_bytes: 64 << 20,
            auto_compact: true,
            merge_factor: 4,
            expect_sketch: None,
        }
    }
}
