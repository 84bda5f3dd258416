//===- OutputFile.h - writing the files users keep --------------*- C++ -*-===//
//
// Every file `cleave` writes for the user (IR, source, annotated models,
// programs) is written beside its destination under a temporary name,
// checked after its last flush and close, fsynced, and renamed over the
// destination (the runtime's DurableFile, which training programs use for
// their files too): a full disk or a failed build leaves the earlier file
// as it was, never a truncated one.
//
//===----------------------------------------------------------------------===//

#ifndef CLEAVE_TOOLS_CLEAVE_OUTPUTFILE_H
#define CLEAVE_TOOLS_CLEAVE_OUTPUTFILE_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace cleave::driver {

/// Writes `contents` to `path` ("-": standard output) as above. On failure
/// reports `cleave <command>: error: cannot write 'path': reason` and
/// returns false.
bool writeOutputFile(llvm::StringRef path, llvm::StringRef contents,
                     llvm::StringRef command);

/// Whether `path` exists and is neither a regular file nor a directory (a
/// device such as /dev/null, or a pipe): such outputs are written in
/// place, not replaced.
bool isSpecialFile(llvm::StringRef path);

/// A new, empty file beside `path` for another program to write `path`'s
/// contents into (the C++ compiler's -o), or "" after reporting why not.
std::string temporaryBeside(llvm::StringRef path, llvm::StringRef command);

/// Makes the finished `temporary` (from temporaryBeside) durable and
/// renames it over `path`. Reports and returns false on failure.
bool commitOutputFile(llvm::StringRef temporary, llvm::StringRef path,
                      llvm::StringRef command);

/// Whether writing `output` would overwrite `input` (the same file, by
/// any path or link); reports it as `cleave <command>: error` naming
/// both and `what` the input is.
bool refuseOutputOverInput(llvm::StringRef output, llvm::StringRef input,
                           llvm::StringRef what, llvm::StringRef command);

} // namespace cleave::driver

#endif // CLEAVE_TOOLS_CLEAVE_OUTPUTFILE_H
