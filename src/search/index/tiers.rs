//! Which segments a publish merges: a size-tiered policy, so that an append costs
//! work in proportion to what it adds, not to the size of the index.
//!
//! Every refresh that indexes something publishes a segment of it ([`super`]), and a
//! query opens every segment (its header, block table and dictionary index), so
//! segments must be merged; but merging all of them, as the index once did whenever
//! there were more than [`super::MAX_SEGMENTS`], made the publish that happened to
//! be the ninth rewrite the whole index (20 s for an index of 257 MB, after an append
//! of 5 MB indexed in 45 ms). The policy here is the log-structured one (size ratio,
//! as in "universal" compaction): only a run of the smallest segments is merged, and
//! a big segment joins a merge only once the smaller ones add up to its size.
//!
//! # The rule
//!
//! A merge is due when the manifest lists more than [`super::MAX_SEGMENTS`]
//! segments. Sort them by length, largest first (`L_0 ≥ L_1 ≥ … ≥ L_{n-1}`; equal
//! lengths oldest first), and let `S_j = L_j + … + L_{n-1}`. Segment `j` *joins* the
//! smaller ones when it is no bigger than all of them together (`L_j ≤ S_{j+1}`) or
//! when it is below the floor ([`FLOOR`]). The merge is the smallest `j ≤ n - 2`
//! that joins, with every segment smaller than it: `j..n`. If none joins, nothing is
//! merged (the sizes are then a steep staircase, and few: see below).
//!
//! # The bounds
//!
//! * **Rewrites per byte.** In a merge of `j..n`, a byte of a member `k > j` ends in a
//!   segment at least `L_j + L_k ≥ 2 L_k` long, and a byte of `j` in one at least
//!   `L_j + S_{j+1} ≥ 2 L_j` long, unless `j` joined by the floor alone. So each time
//!   a byte is rewritten, the segment holding it at least doubles: a byte is
//!   rewritten at most `log2(index / FLOOR)` times once its segment passes the floor
//!   (about 12 times in an index of 2.4 GB, that of a 40 GB home), plus the merges it
//!   takes part in below the floor, each rewriting at most [`FLOOR`] bytes of that
//!   segment. An append therefore costs, amortized, `O(log(index))` times its own
//!   index, and the publish that merges costs the run it merges, usually only the
//!   small segments of the last appends.
//! * **Segments per query.** After a merge of `j..n`, no segment joins any more
//!   (segment `j - 1` did not join `j..n`, and nothing above it changed), so each
//!   segment but the smallest is above the floor and bigger than all the smaller ones
//!   together: `S_0 > 2^(n-2) · FLOOR`. A query therefore opens at most
//!   `max(MAX_SEGMENTS, 2 + log2(index / FLOOR))` segments, whatever manifest it
//!   reads (each is published after its merge): 8 up to an index of 128 MiB, 13 for
//!   2.4 GB (a 40 GB home), 15 at the default cap of 16 GiB. Each segment costs a
//!   query an `open`, its header, its block table and a page of its dictionary per
//!   trigram.
//! * **Dead bytes.** A merge drops the blocks of keys no entry names (a file indexed
//!   again from its start after a rewrite, an entry dropped), and before any merge the
//!   entries of files gone or replaced are dropped. A partial merge cleans only its
//!   run; the rest is cleaned when the run reaches it, or by a **full merge**, done
//!   when the dead bytes are at least half of the index ([`DEAD_SHARE`], estimated
//!   from the block tables: a segment's dead share is that of the file bytes its
//!   blocks cover), so that after a merge the index is less than twice its live
//!   part (the cap counts dead bytes too) and each dead byte costs at most one byte
//!   rewritten to be reclaimed. Dead bytes (and files gone) are looked for only when
//!   the lengths alone call for a merge, so that a publish that merges nothing costs
//!   no `stat` of every entry; appends make such a merge within two publishes (two
//!   segments below the floor join), and an index no longer written keeps what it
//!   has. The tiers make a full merge too when the smaller segments add
//!   up to the largest (the index doubled since its last one).

/// Segments smaller than this always join a merge (see the module docs): it bounds
/// how many segments a query opens, at the cost of rewriting at most this many
/// bytes of a segment below it at each merge.
pub const FLOOR: u64 = 1 << 20;

/// A full merge is made once dead bytes are at least this share of the index
/// (numerator, denominator).
pub const DEAD_SHARE: (u64, u64) = (1, 2);

/// A segment, as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seg {
    /// Its length in bytes.
    pub len: u64,
    /// About how many of them index blocks no entry names any more.
    pub dead: u64,
}

/// The segments to merge (their positions in `segs`, in manifest order, ascending),
/// when more than `max` are listed; `None` when nothing is to be merged. A full
/// merge lists them all.
pub fn plan(segs: &[Seg], max: usize, floor: u64) -> Option<Vec<usize>> {
    let n = segs.len();
    if n <= max || n < 2 {
        return None;
    }
    let total: u64 = segs.iter().map(|s| s.len).sum();
    let dead: u64 = segs.iter().map(|s| s.dead.min(s.len)).sum();
    if u128::from(dead) * u128::from(DEAD_SHARE.1) >= u128::from(total) * u128::from(DEAD_SHARE.0)
        && dead > 0
    {
        return Some((0..n).collect());
    }
    // Largest first; equal lengths in manifest order (oldest first).
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| segs[b].len.cmp(&segs[a].len).then(a.cmp(&b)));
    // below[j]: the total length of the segments after position j of `order`.
    let mut below = vec![0u64; n + 1];
    for j in (0..n).rev() {
        below[j] = below[j + 1] + segs[order[j]].len;
    }
    let j = (0..n - 1).find(|&j| {
        let l = segs[order[j]].len;
        l <= floor || l <= below[j + 1]
    })?;
    let mut run = order[j..].to_vec();
    run.sort_unstable();
    Some(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(lens: &[u64]) -> Vec<Seg> {
        lens.iter().map(|&len| Seg { len, dead: 0 }).collect()
    }

    const M: usize = 8;
    const K: u64 = 1 << 10;
    const MB: u64 = 1 << 20;

    #[test]
    fn the_case_of_the_issue_merges_only_the_small_ones() {
        // An index of 226 MB, then appends of 1 and 5 MB and small ones.
        let lens = [
            226 * MB,
            956 * K,
            50 * K,
            50 * K,
            50 * K,
            956 * K,
            50 * K,
            50 * K,
            956 * K,
        ];
        assert_eq!(plan(&live(&lens), M, FLOOR), Some((1..9).collect()));
        // Not due yet.
        assert_eq!(plan(&live(&lens[..8]), M, FLOOR), None);
        // Small ones that add up to the big one: everything.
        let mut lens = vec![10 * MB];
        lens.extend([2 * MB; 5]);
        lens.extend([50 * K; 3]);
        assert_eq!(plan(&live(&lens), M, FLOOR), Some((0..9).collect()));
        // A staircase: only the bottom of it (the one just past the floor is bigger
        // than all below it together).
        let lens = [
            512 * MB,
            128 * MB,
            32 * MB,
            8 * MB,
            2 * MB,
            MB + 1,
            300 * K,
            200 * K,
            100 * K,
        ];
        assert_eq!(plan(&live(&lens), M, FLOOR), Some(vec![6, 7, 8]));
        // None joins: no merge.
        let lens: Vec<u64> = (0..10).map(|k| (4 * MB) << (2 * (10 - k))).collect();
        assert_eq!(plan(&live(&lens), M, FLOOR), None);
    }

    #[test]
    fn dead_bytes_make_a_full_merge() {
        let mut segs = live(&[
            200 * MB,
            MB,
            50 * K,
            50 * K,
            50 * K,
            50 * K,
            50 * K,
            50 * K,
            50 * K,
        ]);
        assert_eq!(plan(&segs, M, FLOOR), Some((1..9).collect()));
        segs[0].dead = 99 * MB;
        assert_eq!(plan(&segs, M, FLOOR), Some((1..9).collect()));
        segs[0].dead = 101 * MB;
        assert_eq!(plan(&segs, M, FLOOR), Some((0..9).collect()));
    }

    /// A small deterministic generator (splitmix64).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49eb_00d1_31eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A segment of the simulation: its length, and for how many rewrites of its
    /// bytes (at most) each one has been through, split by whether the segment was
    /// past the floor.
    #[derive(Clone, Copy)]
    struct Sim {
        len: u64,
        rewrites_above: u32,
    }

    /// `log2(x)` rounded up, for `x ≥ 1`.
    fn log2_up(x: u64) -> u32 {
        64 - (x.max(1) - 1).leading_zeros()
    }

    /// Publishes appends of random sizes (one or more segments each, as a refresh
    /// writes), applying the policy as `publish` does, and checks the bounds of the
    /// module docs after every publish: the segments a query opens, the rewrites of
    /// each byte past the floor, and that a merge never rewrites more than the run it
    /// chose (each byte of the run once).
    #[test]
    fn random_appends_keep_the_bounds() {
        for seed in 0..300u64 {
            let mut rng = Rng(seed);
            let floor = [FLOOR, 64 * K, 4 * K][(seed % 3) as usize];
            let mut segs: Vec<Sim> = Vec::new();
            let mut written: u64 = 0;
            let mut appended: u64 = 0;
            let mut full_merges = 0;
            let mut merges = 0;
            for _ in 0..400 {
                // Mostly small appends, some large, now and then a burst of segments.
                let kind = rng.below(100);
                let (count, size) = match kind {
                    0..=69 => (1, 1 + rng.below(64 * K)),
                    70..=94 => (1, 1 + rng.below(4 * MB)),
                    95..=98 => (1 + rng.below(4), 1 + rng.below(32 * MB)),
                    _ => (20 + rng.below(20), 8 * MB),
                };
                for _ in 0..count {
                    segs.push(Sim {
                        len: size,
                        rewrites_above: 0,
                    });
                    appended += size;
                }
                let view: Vec<Seg> = segs
                    .iter()
                    .map(|s| Seg {
                        len: s.len,
                        dead: 0,
                    })
                    .collect();
                if let Some(run) = plan(&view, M, floor) {
                    assert!(run.len() >= 2, "{seed}: a merge of {run:?}");
                    assert!(run.windows(2).all(|w| w[0] < w[1]));
                    let out: u64 = run.iter().map(|&k| segs[k].len).sum();
                    written += out;
                    merges += 1;
                    if run.len() == segs.len() {
                        full_merges += 1;
                    }
                    // Each byte of a member past the floor lands in a segment at least
                    // twice as long.
                    let mut rewrites = 0;
                    for &k in &run {
                        let s = segs[k];
                        if s.len > floor {
                            assert!(out >= 2 * s.len, "{seed}: {} into {out}", s.len);
                            rewrites = rewrites.max(s.rewrites_above + 1);
                        }
                    }
                    for &k in run.iter().rev() {
                        segs.remove(k);
                    }
                    segs.insert(
                        run[0],
                        Sim {
                            len: out,
                            rewrites_above: rewrites,
                        },
                    );
                    // Nothing joins after a merge.
                    let view: Vec<Seg> = segs
                        .iter()
                        .map(|s| Seg {
                            len: s.len,
                            dead: 0,
                        })
                        .collect();
                    assert_eq!(plan(&view, 0, floor), None, "{seed}: a cascade");
                }
                let total: u64 = segs.iter().map(|s| s.len).sum();
                assert_eq!(total, appended);
                // Segments per query.
                let bound = M.max(2 + log2_up(total.div_ceil(floor)) as usize);
                assert!(
                    segs.len() <= bound,
                    "{seed}: {} segments, bound {bound}",
                    segs.len()
                );
                // Rewrites per byte past the floor.
                for s in &segs {
                    assert!(
                        s.rewrites_above <= log2_up(total.div_ceil(floor)),
                        "{seed}: {} rewrites in an index of {total}",
                        s.rewrites_above
                    );
                }
            }
            // Amortized: each byte a merge writes lands in a segment at least twice as
            // long as the one it was in, but for the largest member of a run joined by
            // the floor (at most `floor` bytes a merge): far from an index per merge.
            let levels = u64::from(log2_up(appended));
            assert!(
                written <= appended * levels + floor * merges,
                "{seed}: wrote {written} for {appended} appended ({full_merges} full merges)"
            );
        }
    }
}
