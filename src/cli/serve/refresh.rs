//! A read-only server following writers in other processes: every `--refresh-ms` it looks
//! at each database's files (their names, lengths and modification times: a commit appends
//! to a WAL file or switches the manifest) and moves each database whose files changed (one
//! shard of many, or the one database) to its newest committed state. Queries under way
//! finish on the state they began with.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::App;
use crate::cli::output::warn;

/// What a directory's files looked like: (name, length, modified) each, sorted.
type Stamp = Vec<(std::ffi::OsString, u64, Option<SystemTime>)>;

fn stamp(dir: &Path) -> std::io::Result<Stamp> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        // A file removed between the listing and its stat is a change the next look sees.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        files.push((entry.file_name(), meta.len(), meta.modified().ok()));
    }
    files.sort();
    Ok(files)
}

/// Starts the loop that keeps every database of `app.index` current.
pub fn spawn(app: Arc<App>, every: Duration) {
    tokio::spawn(async move {
        // What each database's files looked like when it was last refreshed (`None`: not
        // looked at yet, or its last refresh failed).
        let mut seen: Vec<Option<Stamp>> = vec![None; app.index.dbs().len()];
        let mut interval = tokio::time::interval(every);
        loop {
            interval.tick().await;
            let (app2, before) = (app.clone(), seen.clone());
            let looked = tokio::task::spawn_blocking(move || look(&app2, before)).await;
            if let Ok(now) = looked {
                seen = now;
            }
        }
    });
}

/// One look at every database: each whose stamp differs from `before` is refreshed. Returns
/// the stamps to compare with next time (a failed refresh is warned about and keeps the old
/// stamp, so it is retried at the next look).
fn look(app: &App, before: Vec<Option<Stamp>>) -> Vec<Option<Stamp>> {
    let mut changed = false;
    let mut failed = false;
    let mut after = Vec::with_capacity(before.len());
    for (db, old) in app.index.dbs().iter().zip(before) {
        // Stamped before the refresh reads: a commit landing in between is seen again next
        // time. A directory that cannot be listed now is looked at again next time.
        let Ok(now) = stamp(db.path()) else {
            after.push(old);
            continue;
        };
        if old.as_ref() == Some(&now) {
            after.push(old);
            continue;
        }
        changed = true;
        match db.refresh() {
            Ok(()) => after.push(Some(now)),
            Err(e) => {
                failed = true;
                warn(format_args!(
                    "could not move {} to the writer's newest commits (still serving the \
                     state before them; retrying): {}",
                    db.path().display(),
                    crate::cli::output::CliError::from(e)
                ));
                after.push(old);
            }
        }
    }
    if changed {
        app.metrics.refresh(!failed);
    }
    after
}
