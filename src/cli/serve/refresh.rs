//! A read-only server following a writer in another process: every `--refresh-ms` it looks
//! at the database's files (their names, lengths and modification times: a commit appends
//! to a WAL file or switches the manifest) and, when they changed, moves the index to the
//! newest committed state. Queries under way finish on the state they began with.

use std::path::{Path, PathBuf};
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

/// Starts the loop that keeps `app.index` current.
pub fn spawn(app: Arc<App>, every: Duration) {
    tokio::spawn(async move {
        let dirs: Vec<PathBuf> = app.index.dirs();
        let mut seen: Vec<Stamp> = Vec::new();
        let mut interval = tokio::time::interval(every);
        loop {
            interval.tick().await;
            let (app2, dirs2, before) = (app.clone(), dirs.clone(), seen.clone());
            let looked = tokio::task::spawn_blocking(move || look(&app2, &dirs2, before)).await;
            if let Ok(Some(now)) = looked {
                seen = now;
            }
        }
    });
}

/// One look: the stamps now, when they differ from `before` and the refresh worked (a
/// failure is warned about and retried at the next look).
fn look(app: &App, dirs: &[PathBuf], before: Vec<Stamp>) -> Option<Vec<Stamp>> {
    let now = dirs
        .iter()
        .map(|d| stamp(d))
        .collect::<std::io::Result<Vec<_>>>()
        .ok()?;
    if now == before {
        return None;
    }
    // Stamped before the refresh reads: a commit landing in between is seen again next time.
    match app.index.refresh() {
        Ok(()) => {
            app.metrics.refresh(true);
            Some(now)
        }
        Err(e) => {
            app.metrics.refresh(false);
            warn(format_args!(
                "could not move to the writer's newest commits (still serving the state \
                 before them; retrying): {}",
                crate::cli::output::CliError::from(e)
            ));
            None
        }
    }
}
