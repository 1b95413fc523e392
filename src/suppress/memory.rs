//! Freed heap memory handed back to the operating system between the phases of a large run.
//!
//! Why: the hypercube cover of a million-cell table frees its candidate cubes (hundreds of MB
//! in small vectors) while the audit's certificates grow, and glibc keeps the freed pages of its
//! heaps mapped: the resident set then holds the high-water mark of both phases. Measured on a
//! 1.07 M-cell census table: 2.11 → 1.65 GiB once the cover's candidates are certified.

/// Returns the allocator's free pages to the operating system where the C library can (glibc);
/// elsewhere nothing. The `sdcflow` binary allocates with mimalloc (`src/main.rs`), which hands
/// its free pages back by itself shortly after they are freed, so there this trims only glibc's
/// own, unused heap; it matters to programs that link the library on glibc's allocator.
pub(crate) fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: `malloc_trim` takes no pointer and only releases pages that the allocator's
        // own heaps hold free; glibc makes it safe to call from any thread.
        unsafe {
            malloc_trim(0);
        }
    }
}
