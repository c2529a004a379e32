//! A failure after the commit point does not turn a committed write into an error, and is not
//! silent either: `Db::close` says that sealing the WAL failed, and the committed documents
//! are all there at the next open.

use std::path::Path;
use std::sync::Arc;

use mhdb::db::{Db, Durability, IndexParams, Options};
use mhdb::storage::sim::{FaultFs, SimFs};
use mhdb::storage::vfs::Vfs;

fn opts() -> Options {
    Options {
        durability: Durability::Sync,
        ..Options::default()
    }
}

/// Creates a database on `fs`, commits two documents through the WAL, closes it.
fn write_and_close(fs: Arc<dyn Vfs>) -> (mhdb::Result<()>, mhdb::Result<()>) {
    let db = Db::create_with_vfs(fs, Path::new("/db"), IndexParams::default(), opts()).unwrap();
    let written = db
        .insert_text("a", "the first document with a few words")
        .and_then(|()| db.insert_text("b", "the second document with other words"));
    (written, db.close())
}

#[test]
fn a_failed_seal_is_reported_by_close_and_loses_nothing() {
    let sim = Arc::new(SimFs::new());
    let probe = FaultFs::new(sim.clone(), 0, 5, false);
    let (written, closed) = write_and_close(Arc::new(probe.clone()));
    assert!(written.is_ok() && closed.is_ok());
    let before_close = probe.io_count() - 1;
    assert!(before_close > 0, "the seal writes");

    let sim = Arc::new(SimFs::new());
    let fs = FaultFs::new(sim.clone(), before_close + 1, 5, true);
    let (written, closed) = write_and_close(Arc::new(fs));
    assert!(written.is_ok(), "{written:?}");
    let e = closed.expect_err("the seal's failure is reported");
    assert!(e.to_string().contains("Input/output error"), "{e}");
    let db = Db::open_with_vfs(sim, Path::new("/db"), opts(), false).unwrap();
    assert!(db.contains("a").unwrap() && db.contains("b").unwrap());
}
