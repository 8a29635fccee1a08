//! How peers meet through the signaling server: they join one after another, and each
//! newcomer is given a sample of those already in the room and opens a channel to each
//! (the welcome and the newcomer's offers; docs/SIGNALING.md). Two ways to draw the sample:
//! uniformly at random, as the server did at first, or by locality, the server's rule
//! (`signaling/src/locality.rs`) at the level of ASes: a number of places drawn from the
//! whole room, the rest the peers of the newcomer's AS first, at random within each class.

use ppspp::rng::Rng;

/// How a newcomer's sample is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Uniformly from the room.
    Random,
    /// `random_places` from the room at random, then the newcomer's AS first.
    Local { random_places: usize },
}

/// Who opens a channel to whom: (newcomer, sampled), for hosts joining in `order`, each
/// given at most `size` of those before it. `host_as[i]` is host `i`'s AS.
pub fn meet(
    host_as: &[usize],
    order: &[usize],
    size: usize,
    sampling: Sampling,
    rng: &mut Rng,
) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for (n, &newcomer) in order.iter().enumerate() {
        let mut room: Vec<usize> = order[..n].to_vec();
        shuffle(&mut room, rng);
        let take = size.min(room.len());
        let sample: Vec<usize> = match sampling {
            Sampling::Random => room[..take].to_vec(),
            Sampling::Local { random_places } => {
                let random = random_places.min(take);
                let (drawn, rest) = room.split_at_mut(random);
                // Stable: the shuffle's order within each class stays.
                rest.sort_by_key(|&h| host_as[h] != host_as[newcomer]);
                drawn
                    .iter()
                    .chain(rest.iter())
                    .take(take)
                    .copied()
                    .collect()
            }
        };
        pairs.extend(sample.into_iter().map(|s| (newcomer, s)));
    }
    pairs
}

/// The hosts that no chain of channels links to `from`: islands cut off from it.
pub fn unreachable_from(hosts: usize, pairs: &[(usize, usize)], from: usize) -> Vec<usize> {
    let mut neighbours = vec![Vec::new(); hosts];
    for &(a, b) in pairs {
        neighbours[a].push(b);
        neighbours[b].push(a);
    }
    let mut seen = vec![false; hosts];
    let mut stack = vec![from];
    seen[from] = true;
    while let Some(h) = stack.pop() {
        for &n in &neighbours[h] {
            if !seen[n] {
                seen[n] = true;
                stack.push(n);
            }
        }
    }
    (0..hosts).filter(|&h| !seen[h]).collect()
}

/// Fisher-Yates with the simulator's generator.
pub fn shuffle<T>(xs: &mut [T], rng: &mut Rng) {
    for i in (1..xs.len()).rev() {
        xs.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 4 ASes of 5 hosts each, host i in AS i % 4.
    fn layout() -> (Vec<usize>, Vec<usize>) {
        let host_as: Vec<usize> = (0..20).map(|i| i % 4).collect();
        (host_as, (0..20).collect())
    }

    #[test]
    fn a_local_sample_fills_with_the_newcomers_as_after_its_random_places() {
        let (host_as, order) = layout();
        let mut rng = Rng::new(3);
        let pairs = meet(
            &host_as,
            &order,
            4,
            Sampling::Local { random_places: 1 },
            &mut rng,
        );
        // The last newcomer (host 19, AS 3) had 19 before it, 4 of them in AS 3.
        let last: Vec<usize> = pairs.iter().filter(|p| p.0 == 19).map(|p| p.1).collect();
        assert_eq!(last.len(), 4);
        let same = last.iter().filter(|&&h| host_as[h] == 3).count();
        assert!(same >= 3, "three places for its own AS: {last:?}");
        // Nobody is offered twice or itself.
        for n in 0..20 {
            let mut s: Vec<usize> = pairs.iter().filter(|p| p.0 == n).map(|p| p.1).collect();
            assert!(s.iter().all(|&h| h < n), "only those who joined before");
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), n.min(4));
        }
    }

    #[test]
    fn islands_are_the_hosts_no_chain_of_channels_reaches() {
        assert_eq!(
            unreachable_from(5, &[(0, 1), (2, 1), (3, 4)], 0),
            vec![3, 4]
        );
        assert_eq!(unreachable_from(3, &[], 1), vec![0, 2]);
    }

    #[test]
    fn a_random_sample_ignores_the_as() {
        let (host_as, order) = layout();
        let mut rng = Rng::new(5);
        let pairs = meet(&host_as, &order, 4, Sampling::Random, &mut rng);
        let same = pairs
            .iter()
            .filter(|p| host_as[p.0] == host_as[p.1])
            .count();
        // A quarter of the room shares each newcomer's AS: far from all of the sample.
        assert!(same * 2 < pairs.len(), "{same} of {}", pairs.len());
        assert!(unreachable_from(20, &pairs, 0).is_empty());
    }
}
