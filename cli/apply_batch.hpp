#pragma once
// klab apply over many files (`--out-dir DIR INPUT...`, `--list FILE`): which files, where their
// outputs go, and the run that overlaps file I/O with the filtering: reader threads decode up to
// two files ahead per worker, the workers filter (one per GPU for `--device all`, each taking the
// next decoded file as soon as it is free, so a faster GPU does more files), writer threads encode
// and write (atomically) the finished ones and print a line per file. A file that fails is
// reported and skipped; the others are still processed.
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/error.hpp"
#include "harness/image.hpp"
#include "harness/io/image_io.hpp"

namespace klab::cli {

struct BatchFile {
    std::filesystem::path input;
    std::filesystem::path output;  // <out-dir>/<input's file name>, its extension replaced by --format
};

// The image extensions a directory input contributes (any case).
inline constexpr const char* kBatchExtensions = ".png .jpg .jpeg .pgm .ppm .pnm";

// The paths of a --list file's text: one per line, spaces around it trimmed; blank lines and lines
// starting with '#' are skipped (a '#' inside a path is kept: file names may contain it). Relative
// paths are relative to the working directory, as on the command line. Throws klab::Error naming
// `list_file` and the line for a NUL byte.
std::vector<std::string> parse_input_list(std::string_view text, const std::string& list_file);

// Everything that can be checked before any work, in this order: the inputs (a directory gives its
// images, sorted by name, not recursively; a directory without any is an error; a path that is not
// a directory is taken as a file, and one that cannot be read fails on its own later, unless its
// name has no image extension for its output: then it is refused here as missing or unreadable),
// then `list_file` (one path per line; blank lines and lines starting with '#' are skipped), the
// outputs (`format` "" keeps each input's extension; two inputs writing one output, an output that
// would replace its input, or an output name longer than the file system takes, are refused), and
// `out_dir` (created when missing; it must be a writable directory). Throws klab::Error naming the
// path and what is allowed.
// `check_plan`, when given, sees the plan before `out_dir` is created: the checks of other options
// that depend on the outputs (--jpeg-quality) refuse a run there without leaving a directory behind.
using PlanCheck = std::function<void(const std::vector<BatchFile>&)>;
std::vector<BatchFile> plan_batch(const std::vector<std::string>& inputs, const std::string& list_file,
                                  const std::filesystem::path& out_dir, const std::string& format,
                                  const PlanCheck& check_plan = {});

struct FilteredImage {
    ImageU8 image;                   // what to write, AoS
    std::string description;         // the file's log line after "IN -> OUT: "
    // Lines to print before it (e.g. the GPU's choices); those starting with "warning: " go to stderr.
    std::vector<std::string> notes;
};

// Filters one decoded image on the calling thread; throws for a failure of this file only, or
// BatchStop when no later file can be filtered either.
using BatchFilter = std::function<FilteredImage(ImageU8 image, const BatchFile& file)>;

// A failure after which the batch cannot go on (a lost CUDA context): the file fails with this
// message, and the files after it are not filtered; the final error counts them.
struct BatchStop : Error {
    using Error::Error;
};

// Runs the batch over `files` as described at the top, with one filtering thread per worker
// (workers[0] on the calling thread, the others on threads of their own) and as many reader and
// writer threads as workers. Which worker filters which file depends on timing; what is written
// does not. On a terminal (stderr) a one-line progress bar shows files done/total, the file
// started last and the elapsed time. Ends with "N of M written": printed when all were written,
// else thrown as klab::Error with the failed inputs (in the order of `files`). After SIGINT,
// SIGTERM or SIGHUP (harness/interrupt.hpp) no further file is read or filtered, the files already
// filtered are written, and it throws klab::Interrupted saying how many were written. Every output
// is encoded with `write` (the JPEG quality).
void run_batch(const std::vector<BatchFile>& files, const std::vector<BatchFilter>& workers,
               const io::WriteOptions& write = {});
// One worker: `filter` on the calling thread, one reader, one writer.
void run_batch(const std::vector<BatchFile>& files, const BatchFilter& filter, const io::WriteOptions& write = {});

}  // namespace klab::cli
