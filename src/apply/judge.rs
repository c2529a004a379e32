//! Each input row's outcome: the verdict of its id, what an id met twice does, and the counts
//! of the summary.

use std::collections::HashMap;

use super::ApplyError;
use super::annotation::Note;
use crate::db::ReadIndex;
use crate::decisions::Decisions;
use crate::input::Origin;

/// What an id met a second time in the inputs does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnRepeat {
    /// Stop, naming both places (nothing more is written; the files already written stay).
    #[default]
    Error,
    /// The first row keeps the id's verdict; a later row with the same id is dropped (when
    /// annotating: `keep` false, its `best_match` the id itself).
    KeepFirst,
    /// Every row with the id gets the id's verdict.
    KeepAll,
}

/// What was done, for the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Input files written out.
    pub files: u64,
    /// Rows read.
    pub rows: u64,
    /// Rows written out as kept (with annotation: rows whose `keep` is true).
    pub kept: u64,
    /// Rows dropped (with annotation: rows whose `keep` is false, all written).
    pub dropped: u64,
    /// Rows whose id is not in the index, or whose id could not be read as `add` reads it;
    /// they are kept.
    pub not_in_index: u64,
    /// Rows whose id an earlier row had (with [`OnRepeat::KeepFirst`] or
    /// [`OnRepeat::KeepAll`]).
    pub repeated: u64,
}

/// A row's outcome.
pub struct Outcome {
    /// The row stays.
    pub keep: bool,
    /// What annotating adds to it.
    pub note: Note,
}

/// Decides each row in input order.
pub struct Judge<'a> {
    index: &'a dyn ReadIndex,
    decisions: &'a Decisions,
    on_repeat: OnRepeat,
    seen: HashMap<Vec<u8>, Origin>,
    summary: Summary,
}

impl<'a> Judge<'a> {
    pub fn new(index: &'a dyn ReadIndex, decisions: &'a Decisions, on_repeat: OnRepeat) -> Self {
        Judge {
            index,
            decisions,
            on_repeat,
            seen: HashMap::new(),
            summary: Summary::default(),
        }
    }

    /// The outcome of the row at `origin` whose id is `key` (`Err`: the id could not be read,
    /// so `add` did not store the row).
    pub fn judge(
        &mut self,
        key: Result<Vec<u8>, String>,
        origin: &Origin,
    ) -> Result<Outcome, ApplyError> {
        self.summary.rows += 1;
        let Ok(key) = key else {
            return Ok(self.count(not_in_index()));
        };
        let repeated = match self.seen.get(&key) {
            Some(first) => Some(first.clone()),
            None => {
                self.seen.insert(key.clone(), origin.clone());
                None
            }
        };
        let outcome = self.verdict(&key)?;
        let Some(first) = repeated else {
            return Ok(self.count(outcome));
        };
        self.summary.repeated += 1;
        match self.on_repeat {
            OnRepeat::Error => Err(ApplyError::Other(format!(
                "{origin}: id {} was met before, at {first} (--on-duplicate keep-first or \
                 keep-all to go on)",
                String::from_utf8_lossy(&key)
            ))),
            OnRepeat::KeepAll => Ok(self.count(outcome)),
            OnRepeat::KeepFirst => Ok(self.count(Outcome {
                keep: false,
                note: Note {
                    keep: false,
                    best_match: Some(key),
                    similarity: None,
                    ..outcome.note
                },
            })),
        }
    }

    /// The verdict of a stored id, or a kept row for an id the index does not hold.
    fn verdict(&self, key: &[u8]) -> Result<Outcome, ApplyError> {
        if self.decisions.get(key).is_none() && !self.index.contains(key)? {
            return Ok(not_in_index());
        }
        let d = self.decisions.decision(key);
        Ok(Outcome {
            keep: d.keep,
            note: Note {
                cluster: Some(d.cluster.to_vec()),
                keep: d.keep,
                best_match: d.best_match.map(|(k, _)| k.to_vec()),
                similarity: d.best_match.map(|(_, s)| s),
                in_index: true,
            },
        })
    }

    fn count(&mut self, outcome: Outcome) -> Outcome {
        if !outcome.note.in_index {
            self.summary.not_in_index += 1;
        }
        if outcome.keep {
            self.summary.kept += 1;
        } else {
            self.summary.dropped += 1;
        }
        outcome
    }

    /// The counts so far.
    pub fn summary(&self) -> Summary {
        self.summary
    }
}

/// A row kept because the index does not hold it.
fn not_in_index() -> Outcome {
    Outcome {
        keep: true,
        note: Note {
            cluster: None,
            keep: true,
            best_match: None,
            similarity: None,
            in_index: false,
        },
    }
}
