// klab apply over many files, the plan: the inputs (files, directories, a --list file), where
// their outputs go, and every check that can be made before any work (cli/apply_batch.hpp).
#include "cli/apply_batch.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <fstream>
#include <map>
#include <system_error>

#include <fmt/format.h>

#include "harness/error.hpp"
#include "harness/io/image_io.hpp"

namespace klab::cli {

namespace fs = std::filesystem;

namespace {

constexpr const char* kListAllowed = "a text file with one image path (or directory) per line, '#' comment lines";

// A directory's image files are those named as klab writes images (kBatchExtensions): each one's
// output keeps its name.
bool has_image_extension(const fs::path& path) {
    try {
        (void)io::format_from_extension(path);
        return true;
    } catch (const Error&) {
        return false;
    }
}

// A directory's images, sorted, not recursive: regular files (through links), and broken links,
// which then fail on their own as unreadable files. Anything else named like an image is skipped
// like a subdirectory: reading a FIFO would wait for a writer forever.
std::vector<fs::path> directory_images(const fs::path& dir) {
    std::vector<fs::path> found;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::error_code type_ec;
        const bool regular = it->is_regular_file(type_ec);
        const bool broken_link = it->is_symlink(type_ec) && !fs::exists(it->path(), type_ec);
        if ((regular || broken_link) && has_image_extension(it->path())) found.push_back(it->path());
    }
    if (ec) {
        throw Error(fmt::format("cannot list directory '{}': {}", dir.string(), ec.message()),
                    "directories klab may read (and search), or image files");
    }
    if (found.empty()) {
        throw Error(fmt::format("directory '{}' holds no images (no {} files; subdirectories are not searched)", dir.string(),
                                kBatchExtensions),
                    "directories with image files, or image files");
    }
    std::sort(found.begin(), found.end());
    return found;
}

// Reads the --list file and parses it.
std::vector<std::string> read_list(const std::string& list_file) {
    std::ifstream in(list_file, std::ios::binary);
    if (!in) {
        throw Error(fmt::format("cannot read --list '{}': {}", printable(list_file), std::error_code(errno, std::generic_category()).message()),
                    kListAllowed);
    }
    const std::string name = fmt::format("--list '{}'", printable(list_file));
    return parse_input_list(io::read_all(in, list_file, io::kMaxTextFileBytes, name, kListAllowed), printable(list_file));
}

void prepare_out_dir(const fs::path& out_dir, const fs::path& first_output) {
    std::error_code ec;
    const fs::file_status status = fs::status(out_dir, ec);
    if (status.type() == fs::file_type::not_found) {
        fs::create_directories(out_dir, ec);
        if (ec) {
            throw Error(fmt::format("cannot create --out-dir '{}': {}", out_dir.string(), ec.message()),
                        "a directory that exists or can be created");
        }
    } else if (ec) {
        throw Error(fmt::format("cannot access --out-dir '{}': {}", out_dir.string(), ec.message()), "a writable directory");
    } else if (!fs::is_directory(status)) {
        throw Error(fmt::format("--out-dir '{}' is not a directory", out_dir.string()),
                    "a writable directory (created when missing)");
    }
    io::check_writable(first_output, 1);  // a writable directory; every format takes 1 channel
}

}  // namespace

std::vector<std::string> parse_input_list(std::string_view text, const std::string& list_file) {
    std::vector<std::string> paths;
    std::size_t line_number = 0;
    while (!text.empty()) {
        ++line_number;
        const std::size_t end = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, end);
        text.remove_prefix(std::min(end + 1, text.size()));
        // A path cannot hold a NUL byte: the system would read it as the end of a shorter path.
        if (line.find('\0') != std::string_view::npos) {
            throw Error(fmt::format("--list '{}': line {} holds a NUL byte", list_file, line_number), kListAllowed);
        }
        const auto is_space = [](char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; };
        while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
        while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
        if (line.empty() || line.front() == '#') continue;
        paths.emplace_back(line);
    }
    return paths;
}

std::vector<BatchFile> plan_batch(const std::vector<std::string>& inputs, const std::string& list_file,
                                  const fs::path& out_dir, const std::string& format, const PlanCheck& check_plan) {
    std::vector<std::string> sources = inputs;
    if (!list_file.empty()) {
        const std::vector<std::string> listed = read_list(list_file);
        sources.insert(sources.end(), listed.begin(), listed.end());
    }
    std::vector<fs::path> files;
    for (const std::string& source : sources) {
        std::error_code ec;
        if (fs::is_directory(source, ec)) {
            const std::vector<fs::path> found = directory_images(source);
            files.insert(files.end(), found.begin(), found.end());
        } else {
            files.emplace_back(source);  // read (and fail, if it must) on its turn
        }
    }
    if (files.empty()) {
        throw Error(fmt::format("no input images{}", list_file.empty() ? "" : fmt::format(" (--list '{}' names none)", list_file)),
                    "--out-dir DIR INPUT... (image files or directories) and/or --list FILE");
    }

    std::vector<BatchFile> plan;
    std::map<fs::path, fs::path> input_of;  // output identity -> the input writing it
    for (const fs::path& input : files) {
        fs::path name = input.filename();
        if (name.empty() || name == "." || name == "..") {
            throw Error(fmt::format("input '{}' does not name a file", input.string()), "image files or directories");
        }
        if (!format.empty()) name.replace_extension("." + format);
        const fs::path output = out_dir / name;
        try {
            (void)io::format_from_extension(output);
        } catch (const Error&) {
            // Its name would be refused next; a missing or unreachable input is what to fix first.
            std::error_code ec;
            if (const fs::file_status status = fs::symlink_status(input, ec); status.type() == fs::file_type::not_found) {
                throw Error(fmt::format("input '{}' does not exist", input.string()), "existing image files or directories");
            } else if (ec) {
                throw Error(fmt::format("input '{}' cannot be read: {}", input.string(), ec.message()),
                            "existing, readable image files or directories");
            }
            throw Error(fmt::format("cannot write '{}' (the output of '{}'): '{}' is no image file extension", output.string(),
                                    input.string(), name.extension().string()),
                        "inputs named .png .jpg .jpeg .pgm .ppm .pnm, or --format png|jpg|jpeg|pgm|ppm|pnm");
        }
        if (io::output_replaces_input(input, output)) {
            throw Error(fmt::format("the output of '{}' would replace the input itself", input.string()),
                        "an --out-dir other than the input's directory, or --format with another extension");
        }
        io::check_file_name_length(output);  // every output's, before --out-dir is made
        const auto [at, inserted] = input_of.emplace(io::output_location(output), input);
        if (!inserted) {
            throw Error(io::file_identity(at->second) == io::file_identity(input)
                            ? fmt::format("'{}' is given twice{}", input.string(),
                                          at->second == input ? "" : fmt::format(" (also as '{}')", at->second.string()))
                            : fmt::format("two inputs would write the same output '{}': '{}' and '{}'", output.string(),
                                          at->second.string(), input.string()),
                        "inputs with distinct file names (run the others into another --out-dir)");
        }
        plan.push_back({input, output});
    }
    if (check_plan) check_plan(plan);
    prepare_out_dir(out_dir, plan.front().output);
    return plan;
}

}  // namespace klab::cli
