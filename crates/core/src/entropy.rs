//! Random bytes for what a start needs (the audit salt, a session label), read from the kernel.
//!
//! Not from the thread RNG: its first use probes the CPU's vector features with about a dozen
//! `cpuid`s, and a virtual machine traps every one (7 µs each on one of this project's VMs:
//! 0.1 ms of every start). Later calls (client keys, leases) may use the thread RNG freely.

use rand::TryRngCore;

/// `N` random bytes from the kernel (one `getrandom`); from the thread RNG only if the kernel
/// refuses.
#[must_use]
pub fn kernel_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if rand::rngs::OsRng.try_fill_bytes(&mut bytes).is_err() {
        bytes = rand::random();
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::kernel_bytes;

    #[test]
    fn each_draw_is_new() {
        let draws: std::collections::BTreeSet<[u8; 16]> = (0..64).map(|_| kernel_bytes()).collect();
        assert_eq!(draws.len(), 64);
    }
}
