//! The write endpoints of a `--writer` server: `/insert`, `/insert_if_novel`, `/delete`. The
//! database is open with `Durability::Sync`: each answers once its write is durable, and
//! concurrent requests share their fsyncs (the group commit).

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::{Request, State};
use mhdb::db::{Db, Novelty, NoveltyOptions, QueryResult, WriteBatch};
use serde_json::{Value, json};

use super::App;
use super::guard::{Permit, blocking, permit};
use super::reply::{ApiError, Reply, json_value};
use super::request::{
    Document, NOVELTY_FIELDS, QueryInput, document, items, key_field, novelty_options, object,
    parse_json, read_body,
};
use crate::cli::shapes;

/// `POST /insert`: `{"id", "text"}` (or `"signature"`), or a list of them, stored in one
/// atomic write (a key already stored is replaced). Answers `{"committed": N}`.
pub async fn insert(State(app): State<Arc<App>>, req: Request) -> Reply {
    let (permit, value, db) = write_request(&app, req).await?;
    let (items, _) = items(&value, app.limits.max_batch)?;
    let docs = documents(&items, &[])?;
    let answer = blocking(permit, move || {
        let batch = signed_batch(&db, &docs)?;
        db.write(&batch)?;
        app.metrics.commit(docs.len(), 0, 0);
        Ok(json!({"committed": docs.len()}))
    })
    .await?;
    Ok(json_value(&answer))
}

/// `POST /insert_if_novel`: a document (or a list, each checked against the index and the
/// ones before it) stored unless a stored one is similar; the check and the store are one
/// step for every writer. Answers `{"inserted": true}` or `{"inserted": false, "matches"}`
/// per document (a list for a list).
pub async fn insert_if_novel(State(app): State<Arc<App>>, req: Request) -> Reply {
    let (permit, value, db) = write_request(&app, req).await?;
    let (items, one) = items(&value, app.limits.max_batch)?;
    let docs = documents(&items, NOVELTY_FIELDS)?;
    let opts = one_novelty(&items, &db)?;
    let outcomes = blocking(permit, move || {
        let outcomes = db.insert_many_if_novel(&signed_batch(&db, &docs)?, &opts)?;
        let stored = outcomes.iter().filter(|o| o.is_inserted()).count();
        app.metrics.commit(stored, outcomes.len() - stored, 0);
        Ok(outcomes)
    })
    .await?;
    let mut answers: Vec<Value> = outcomes.into_iter().map(novelty_json).collect();
    Ok(json_value(&if one {
        answers.remove(0)
    } else {
        Value::Array(answers)
    }))
}

/// `POST /delete`: `{"id"}` or a list of them, deleted in one atomic write. Answers
/// `{"deleted", "requested"}` as `mhdb delete --json` does (distinct keys requested, and of
/// those, the present ones).
pub async fn delete(State(app): State<Arc<App>>, req: Request) -> Reply {
    let (permit, value, db) = write_request(&app, req).await?;
    let (items, _) = items(&value, app.limits.max_batch)?;
    let mut keys = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let key = object(item, &["id"])
            .and_then(key_field)
            .map_err(|e| at(i, &e))?;
        keys.push(key);
    }
    let mut seen = HashSet::with_capacity(keys.len());
    keys.retain(|k| seen.insert(k.clone()));
    let answer = blocking(permit, move || {
        let mut batch = WriteBatch::new();
        let mut present = 0usize;
        for key in &keys {
            present += usize::from(db.contains(key)?);
            batch.delete(key);
        }
        db.write(&batch)?;
        app.metrics.commit(0, 0, present);
        Ok(json!({"deleted": present, "requested": keys.len()}))
    })
    .await?;
    Ok(json_value(&answer))
}

/// A write request's permit, body as JSON, and the writer's handle.
async fn write_request(
    app: &Arc<App>,
    req: Request,
) -> Result<(Option<Permit>, Value, Arc<Db>), ApiError> {
    let db = app.writer.clone().ok_or_else(|| {
        ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "read_only",
            "this server was started without --writer: it answers queries only",
        )
    })?;
    let permit = permit(&req);
    let (parts, body) = req.into_parts();
    let bytes = read_body(&parts.headers, body, app.limits.max_body_bytes).await?;
    Ok((permit, parse_json(&bytes)?, db))
}

/// The documents of a write, each error naming its document.
fn documents(items: &[&Value], extra: &[&str]) -> Result<Vec<Document>, ApiError> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| document(v, extra).map_err(|e| at(i, &e)))
        .collect()
}

/// An error about the `i`th document (from 0) of a request.
fn at(i: usize, e: &str) -> ApiError {
    ApiError::usage(format!("document {i}: {e}"))
}

/// The one way every document of an insert-if-novel request asks to be checked.
fn one_novelty(items: &[&Value], db: &Db) -> Result<NoveltyOptions, ApiError> {
    let mut chosen: Option<NoveltyOptions> = None;
    for (i, item) in items.iter().enumerate() {
        let opts = novelty_options(item, db.params()).map_err(|e| at(i, &e))?;
        let key = |o: &NoveltyOptions| (o.threshold, o.limit, o.estimate_only);
        match &chosen {
            Some(c) if key(c) != key(&opts) => {
                return Err(at(
                    i,
                    "every document of one request is checked alike: give the same \
                     \"threshold\", \"limit\" and \"no_exact\" to all (or send them apart)",
                ));
            }
            Some(_) => {}
            None => chosen = Some(opts),
        }
    }
    Ok(chosen.unwrap_or_default())
}

/// The documents signed into one batch; a text without shingles is refused, as `add` does.
fn signed_batch(db: &Db, docs: &[Document]) -> Result<WriteBatch, ApiError> {
    let mut batch = WriteBatch::new();
    for (i, doc) in docs.iter().enumerate() {
        let sig = match &doc.input {
            QueryInput::Text(text) => {
                let sig = db.sketch_text(text)?;
                if db.params().has_no_shingles(&sig) {
                    return Err(at(
                        i,
                        "the text has no shingles (empty or white space only): it is similar \
                         to nothing, and not stored",
                    ));
                }
                sig
            }
            QueryInput::Signature(sig) => sig.clone(),
        };
        batch.insert(&doc.key, sig);
    }
    Ok(batch)
}

/// One outcome: `{"inserted": true}`, or `{"inserted": false, "matches"}` with the matches
/// in a query answer's shape.
fn novelty_json(outcome: Novelty) -> Value {
    match outcome {
        Novelty::Inserted => json!({"inserted": true}),
        Novelty::Duplicate(matches) => {
            let r = QueryResult {
                matches,
                ..QueryResult::default()
            };
            let mut answer = shapes::answer(Value::Null, &r);
            json!({"inserted": false, "matches": answer["matches"].take()})
        }
    }
}
