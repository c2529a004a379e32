//! The similarity a result carries, named by the metric it is in: an index's kind decides it,
//! so a caller reading [`Match::similarity`](super::Match::similarity) or
//! [`DedupPair::similarity`](super::DedupPair::similarity) knows what the number measures.

/// The metric of a reported similarity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// The Jaccard similarity of shingle sets (MinHash index): estimated from the MinHash
    /// signatures, or exact from the stored shingle sets.
    Jaccard,
    /// The cosine similarity of SimHash feature vectors (SimHash index): estimated from the
    /// Hamming distance `d` between the fingerprints as `cos(π·d/64)`.
    Cosine,
    /// The containment `|Q ∩ X| / |Q|` of the query's shingle set Q in a stored document's X
    /// (containment index): estimated from the Jaccard estimate and the two set sizes, or
    /// exact from the stored shingle sets.
    Containment,
}

impl Metric {
    /// The metric's name: `jaccard` or `cosine`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Jaccard => "jaccard",
            Metric::Cosine => "cosine",
            Metric::Containment => "containment",
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(Metric::Jaccard.name(), "jaccard");
        assert_eq!(Metric::Cosine.to_string(), "cosine");
    }
}
