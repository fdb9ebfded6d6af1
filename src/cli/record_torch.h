/* record_torch.h - `vramtrace record`'s PyTorch shim: find the traced
 * program's torch, build src/inject/torch/vt_torch_shim.cpp against its own
 * headers on first use, cache it per torch version, C++ ABI and shim
 * source (docs/ARCHITECTURE.md, "Tensor events in PyTorch's caching
 * allocator").  The pure parts are tested without torch
 * (tests/cli/test_record_torch.c). */
#ifndef RECORD_TORCH_H
#define RECORD_TORCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The version in the text of torch/version.py (`__version__ = '2.11.0+cu130'`)
 * into out; 0, or -1 when there is none. */
int vt_torch_parse_version(const char *text, char *out, size_t outlen);

/* Whether the bytes of libc10.so use the C++11 string ABI (its symbols
 * name std::__cxx11): 1, else 0. */
int vt_torch_cxx11_abi(const unsigned char *data, size_t len);

/* The cache entry's directory name: "torch-VERSION-abiN-HASH", the version's
 * characters other than [A-Za-z0-9.+_-] as '_'. */
void vt_torch_cache_name(const char *version, int abi, uint32_t src_hash, char *out, size_t outlen);

/* Hash of the embedded shim sources (FNV-1a, 32 bits). */
uint32_t vt_torch_src_hash(void);

/* For `record`: the shim for the torch of `python` (the traced program's
 * interpreter).  Returns 1 with its path in out (cached, or built now when
 * background is 0); 2 when background is 1 and it is being built by the
 * child *builder: out is where it will be, and PATH.failed appears there
 * instead, holding the reason, if it does not build; 0 when there is no
 * torch (nothing to do); -1 when it cannot be built, with the reason in
 * why (one line; the build log's path in it). */
int vt_record_torch_shim(const char *python, int quiet, int background, pid_t *builder, char *out, size_t outlen,
                         char *why, size_t whylen);

/* The interpreter of a command: cmd0 itself when it is python*, else the
 * interpreter of its #! line when that is python*, else "python3". */
void vt_torch_python_of(const char *cmd0, char *out, size_t outlen);

/* For `record`: the directory of vramtrace's sitecustomize.py and
 * vramtrace_holders.py (src/python, embedded; written into the cache on
 * first use).  0 with its path in out, or -1 with why. */
int vt_record_python_dir(char *out, size_t outlen, char *why, size_t whylen);

#endif
