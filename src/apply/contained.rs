//! A containment index's decision, from its inputs: each document is read, signed and
//! queried as [`Decisions::compute_containment`] asks, before the inputs are read again to be
//! written.

use super::{ApplyError, ApplyOptions, Event, input_error};
use crate::db::ReadIndex;
use crate::db::ingest::Source;
use crate::decisions::Decisions;
use crate::input::{Error, Reader};

/// Records read at a time.
const CHUNK: usize = 1024;

/// Every stored document of `inputs` decided by containment at `opts.threshold`. Records that
/// cannot be read as `add` reads them are passed over (they are kept, as rows not in the
/// index are); what cannot be read at all is the error.
pub(super) fn decisions(
    index: &dyn ReadIndex,
    inputs: &[std::path::PathBuf],
    opts: &ApplyOptions,
    events: &mut dyn FnMut(Event<'_>),
) -> Result<Decisions, ApplyError> {
    let mut reader = Reader::new(inputs, opts.fields.clone())
        .map_err(input_error)?
        .max_document_bytes(opts.max_document_bytes, true);
    let mut failure: Option<Error> = None;
    let fields = opts.fields.clone();
    let mut documents = || match reader.next_chunk(CHUNK) {
        Ok(items) => items
            .into_iter()
            .filter_map(|item| fields.parse(item).ok())
            .map(|r| (r.key, r.content))
            .collect(),
        Err(e) => {
            failure = Some(e);
            Vec::new()
        }
    };
    let decided = Decisions::compute_containment(
        index,
        &mut documents,
        opts.threshold,
        opts.dedup.estimate_only,
        &opts.keep,
        &mut |n| events(Event::Queried(n)),
    );
    if let Some(e) = failure {
        return Err(input_error(e));
    }
    Ok(decided?)
}
