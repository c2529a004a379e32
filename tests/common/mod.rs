//! Helpers shared by the integration tests.

use std::collections::BTreeMap;

use mhdb::db::Db;

/// Every live key (as UTF-8) with its stored packed signature.
pub fn stored(db: &Db) -> BTreeMap<String, Vec<u8>> {
    db.keys()
        .unwrap()
        .into_iter()
        .map(|k| {
            let sig = db.get(&k).unwrap().unwrap().packed;
            (String::from_utf8(k).unwrap(), sig)
        })
        .collect()
}
