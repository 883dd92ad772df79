// SPDX-License-Identifier: Apache-2.0
// DBLOCK_EXPORT: marks the declarations a shared dblock library exports.
//
//   class DBLOCK_EXPORT Connection { ... };
//   DBLOCK_EXPORT std::unique_ptr<Connection> open_connection(const DatabaseUrl& url);
//
// dblock's libraries are compiled with hidden symbols (-fvisibility=hidden); only what carries
// this macro, the public API declared under <dblock/...>, is visible from libdblock_*.so. A
// static library exports nothing, so the attribute changes nothing there. On compilers without
// ELF visibility attributes the macro is empty (such platforms are not supported for shared
// builds; see docs/install.md).
//
// Thread-safety: not applicable (a macro).
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define DBLOCK_EXPORT __attribute__((visibility("default")))
#else
#define DBLOCK_EXPORT
#endif
