//! Set pairs with an exactly known Jaccard similarity, for the estimator tests.

/// Splits `elems` into two sets that share its first `inter` elements and divide the rest
/// between them (the first half to A, the second to B). With distinct elements — as drawn
/// from one [`super::rng::XorShift64`] stream, which never repeats a value — that gives
/// |A ∪ B| = `elems.len()` and |A ∩ B| = `inter`.
pub fn overlapping(elems: &[u64], inter: usize) -> (Vec<u64>, Vec<u64>) {
    let (shared, rest) = elems.split_at(inter);
    let (a_only, b_only) = rest.split_at(rest.len() / 2);
    let a = shared.iter().chain(a_only).copied().collect();
    let b = shared.iter().chain(b_only).copied().collect();
    (a, b)
}
