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
    /// The secret key of a keyed index (`format/hashing.md` §12): given to
    /// [`Db::create`](super::Db::create), the index hashes shingles under it and stores its
    /// fingerprint; given to an open, it is checked against that fingerprint. An open of a keyed
    /// index without it reads the key file named by `MHDB_KEY_FILE`, if set; with no key at all
    /// the index still answers signature queries, and refuses text ones, saying why.
    pub key: Option<crate::sketch::SecretKey>,
    /// The identity of a database this handle creates ([`Db::create`](super::Db::create), and
    /// the destination of an export or upgrade): for tests and fixture generators. `None`
    /// draws one (or takes [`TEST_IDENTITY_ENV`](super::TEST_IDENTITY_ENV) when set). Ignored
    /// by an open.
    pub identity: Option<crate::storage::identity::DbId>,
    /// Whether a database this handle creates ([`Db::create`](super::Db::create)) has the
    /// EXACT_HASH column (`format/hashing.md` §17): a MinHash index of texts or token lists
    /// then stores each such document's exact hash. On by default; a SimHash index, and one
    /// of signatures made elsewhere, never has it. Ignored by an open (the database says).
    pub exact_hash: bool,
    /// Whether a database this handle creates ([`Db::create`](super::Db::create)) writes a
    /// membership filter per band into each segment (manifest feature BAND_FILTERS,
    /// `format/segment.md`): a lookup of a band key a segment lacks then reads one cache line
    /// instead of the band's table, about 10 bits per distinct key and band. On by default.
    /// Ignored by an open (the database says).
    pub band_filters: bool,
    /// Whether a database this handle creates has the SET_SIZE column: a MinHash index of
    /// texts or token lists then stores each such document's number of distinct shingle
    /// hashes, which `dedup --keep longest|shortest` ranks by. On by default; a SimHash
    /// index, and one of signatures made elsewhere, never has it. Ignored by an open.
    pub set_size: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            durability: Durability::Sync,
            memtable_bytes: 64 << 20,
            auto_compact: true,
            merge_factor: 4,
            expect_sketch: None,
            key: None,
            identity: None,
            exact_hash: true,
            band_filters: true,
            set_size: true,
        }
    }
}
