// klab tune: the autotuner's front end (autotune/). On a GPU it tunes every variant (convolution,
// Sobel, integral image) on the chosen problem classes of its operation and merges the winners
// into results/<gpu-slug>/autotune.json; --dry-run shows the search space without measuring;
// --plan-for shows the space on a GPU model we do not have, from the registers and shared memory
// recorded by earlier tunes (no GPU needed).
// --device N tunes that GPU; --device all starts one klab tune per GPU (cli/device_fanout.hpp), the
// GPUs of one model sharing its classes (--class-share K/N, set by --device all).
// One file over ~400 lines: the command's parts (the classes and variants the options choose, the
// plan without a GPU, the run on one GPU, the fan-out over all) all work on one TuneCliOptions and
// one list of jobs (jobs_of), which --plan-for and --dry-run print (print_space) and the run measures.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "autotune/gpu_model.hpp"
#include "autotune/problem_class.hpp"
#include "autotune/search_space.hpp"
#include "autotune/tuner.hpp"
#include "autotune/tuning_cache.hpp"
#include "bench/study.hpp"
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "cli/device_fanout.hpp"
#include "harness/device_info.hpp"
#include "harness/device_select.hpp"
#include "harness/error.hpp"
#include "harness/interrupt.hpp"
#include "harness/synth.hpp"
#include "harness/variant.hpp"

namespace klab::cli {

namespace {

using namespace klab::autotune;

struct TuneCliOptions {
    std::vector<std::string> variants;  // empty: every variant of the chosen operations
    std::vector<std::string> ops;       // empty: every operation, or the named variants' operations
    std::vector<std::string> sizes = {"HD", "8K"};
    std::vector<int> mask_sizes = {3, 9};
    std::vector<int> channels = {3};
    std::vector<std::string> layouts = {"aos", "soa"};
    double min_occupancy = 1.0;
    double budget_seconds = 0.2;
    int min_samples = 10;
    std::string results = "results";
    bool dry_run = false;
    std::string plan_for;  // a GPU model name: the offline plan
    bool verbose = false;
    bool missing_only = false;  // skip classes this GPU already has a current record of
    std::vector<ProblemClass> classes;  // when set (klab run, --class, --study): these classes instead of the product above
    std::vector<std::string> class_texts;  // --class
    std::string study;                     // --study: a study's classes, as klab run tunes them
    std::string device;       // --device N or all; empty: the current device
    std::string class_share;  // "K/N": only classes K, K+N, K+2N, ... of the list (numbered from 1)
};

struct Job {
    const Variant* variant;
    ProblemClass problem_class;
};

Operation operation_named(const std::string& name) {
    if (name == "convolve") return Operation::convolve;
    if (name == "sobel") return Operation::sobel;
    if (name == "integral") return Operation::integral;
    throw Error(fmt::format("--op {}", name), "convolve, sobel or integral");
}

// The variants of `op` to tune: every registered one, or those --variant names.
std::vector<const Variant*> chosen_variants(const TuneCliOptions& o, Operation op) {
    if (o.variants.empty()) return Registry::instance().for_op(op);
    std::vector<const Variant*> out;
    for (const std::string& name : o.variants) {
        const Variant& v = Registry::instance().get(name);  // its error lists the names
        if (v.op() == op && std::find(out.begin(), out.end(), &v) == out.end()) out.push_back(&v);  // named twice: tuned once
    }
    return out;
}

// The operations whose classes the product of --size, --mask-size, --channels and --layout makes,
// or --study keeps: --op, else the named variants' operations, else all three.
std::vector<Operation> chosen_operations(const TuneCliOptions& o) {
    std::vector<Operation> ops;
    const auto add = [&](Operation op) {
        if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    };
    for (const std::string& name : o.ops) add(operation_named(name));
    if (ops.empty()) {
        for (const std::string& name : o.variants) add(Registry::instance().get(name).op());
    }
    if (ops.empty()) ops = {Operation::convolve, Operation::sobel, Operation::integral};
    return ops;
}

// --study: the classes klab run tunes first for that study, of the chosen operations only (--op,
// else the --variant ones'), so that `klab tune --study full --missing-only` is klab run's tuning
// phase alone, and --variant narrows it without a line per class of another operation.
std::vector<ProblemClass> study_classes(const TuneCliOptions& o) {
    const std::vector<Operation> ops = chosen_operations(o);
    std::vector<ProblemClass> classes;
    for (const ProblemClass& c : bench::tuned_classes(bench::parse_study(o.study))) {
        if (std::find(ops.begin(), ops.end(), c.op) != ops.end()) classes.push_back(c);
    }
    if (classes.empty()) {
        throw Error(fmt::format("--study {} has no class of the operations chosen ({})", o.study,
                                fmt::join(o.ops.empty() ? o.variants : o.ops, ", ")),
                    "--op or --variant of an operation the study has");
    }
    return classes;
}

// Classes in size order (those of --class and --study in their own order), the variants of a class
// one after another (the tuner keeps the class's image and reference between them). Unsupported
// pairs are listed and skipped.
std::vector<Job> jobs_of(const TuneCliOptions& o, std::vector<std::string>& skipped) {
    std::vector<ProblemClass> classes = o.classes;
    const std::vector<Operation> ops = chosen_operations(o);
    for (const std::string& size : o.classes.empty() ? o.sizes : std::vector<std::string>{}) {
        // The buckets alone: parse_resolution's own message would offer WxH sizes too.
        const char* const buckets = "480p, 720p, HD, 4K or 8K (the tuner tunes resolution buckets, not WxH sizes)";
        synth::Resolution r;
        try {
            r = synth::parse_resolution(size);
        } catch (const Error&) {
            throw Error(fmt::format("--size {}: not a resolution bucket", printable(size)), buckets);
        }
        if (r.name.find('x') != std::string::npos) throw Error(fmt::format("--size {}: a WxH size", size), buckets);
        for (Operation op : ops) {
            for (int c : o.channels) {
                for (const std::string& layout : o.layouts) {
                    if (op == Operation::convolve) {
                        for (int k : o.mask_sizes) {
                            classes.push_back(parse_problem_class(fmt::format("{}/{}x{}/c{}/{}", r.name, k, k, c, layout)));
                        }
                    } else {
                        // The bucket's own image decides an integral class's sums (u64 at 8K).
                        Problem p;
                        p.op = op;
                        p.shape = ImageShape{r.width, r.height, c, parse_layout(layout)};
                        classes.push_back(problem_class(p));
                    }
                }
            }
        }
    }
    // A class given twice (--size HD --size HD, --class C --class C) is tuned once.
    std::vector<ProblemClass> distinct;
    for (const ProblemClass& c : classes) {
        if (std::find(distinct.begin(), distinct.end(), c) == distinct.end()) distinct.push_back(c);
    }
    classes = std::move(distinct);
    // A variant named with --variant that no class can take (conv.halo_tiled with --op sobel) would
    // silently leave nothing to do. Checked on the whole list: one share of it may hold one operation.
    for (const std::string& name : o.variants) {
        const Variant& v = Registry::instance().get(name);
        const bool taken = std::any_of(classes.begin(), classes.end(), [&](const ProblemClass& c) { return c.op == v.op(); });
        if (!taken && !classes.empty()) {
            const char* op = to_string(v.op());
            throw Error(fmt::format("--variant {} is a {} variant, but no class to tune is a {} class", name, op, op),
                        "--op and --class of the variants' own operations");
        }
    }
    // The share is taken from the whole list, before --missing-only looks at the cache: processes
    // sharing the list each see the same numbering, whatever the others have stored meanwhile.
    if (!o.class_share.empty()) {
        const auto [share, shares] = parse_class_share(o.class_share);
        std::vector<ProblemClass> mine;
        for (std::size_t i = 0; i < classes.size(); ++i) {
            if (static_cast<int>(i % static_cast<std::size_t>(shares)) == share - 1) mine.push_back(classes[i]);
        }
        classes = std::move(mine);
    }
    std::vector<Job> jobs;
    for (const ProblemClass& c : classes) {
        const std::vector<const Variant*> variants = chosen_variants(o, c.op);
        if (variants.empty()) skipped.push_back(fmt::format("{}: no --variant named is a {} variant", to_string(c), to_string(c.op)));
        for (const Variant* v : variants) {
            const Problem problem = representative_problem(c, *v);
            if (const Support s = v->supports(problem); !s) {
                skipped.push_back(fmt::format("{} {}: {}", v->name(), to_string(c), s.reason()));
                continue;
            }
            jobs.push_back({v, c});
        }
    }
    return jobs;
}

void print_space(const SearchSpace& space, bool verbose) {
    fmt::print("    {}\n", space.summary());
    for (const Candidate& c : space.candidates) {
        if (c.included()) {
            std::string registers;
            for (const KernelOccupancy& k : c.kernels) {
                registers += fmt::format("{}{} {} regs", registers.empty() ? "" : ", ", k.kernel_name, k.resources.registers_per_thread);
            }
            fmt::print("    {:<14} {:>5} threads  occupancy {:<22} {}\n", to_string(c.shape), c.threads, to_string(*c.occupancy), registers);
        } else if (verbose) {
            fmt::print("    {:<14} excluded: {}\n", to_string(c.shape), c.excluded_because);
        }
    }
}

// The space the tuner measures for one job: at the requested minimum occupancy, or, where no shape
// reaches it, at the highest any shape reaches, said in a line first (as Tuner::tune does).
void print_planned_space(const Variant& variant, const Problem& problem, double requested, const OccupancyOracle& oracle,
                         bool verbose) {
    const SearchSpace every_shape = search_space(variant, problem, kAnyOccupancy, oracle);
    if (every_shape.included().empty()) {  // no shape runs at all: the reasons, shape by shape with --verbose
        print_space(search_space(variant, problem, requested, oracle), verbose);
        return;
    }
    const double applied = applied_min_occupancy(every_shape, requested);
    if (applied < requested - 1e-9) {
        fmt::print("    no shape reaches {} occupancy: the tuner takes the shapes at the highest reached, {}\n", percent_text(requested),
                   percent_text(applied));
    }
    print_space(search_space(variant, problem, applied, oracle), verbose);
}

// --plan-for: each kernel's registers and shared memory as recorded by earlier tunes of the same
// variant (any GPU): from the record of the same class first (the same template instance), else
// one with the same channel count and layout. A kernel name can stand for several instances.
std::function<std::optional<KernelResources>(const std::string&)> recorded_resources(const TuningCache& cache,
                                                                                    const Variant& variant,
                                                                                    const ProblemClass& wanted) {
    return [&cache, &variant, wanted](const std::string& kernel) -> std::optional<KernelResources> {
        std::optional<KernelResources> similar;
        for (const TuningRecord& r : cache.records()) {
            if (r.variant != variant.name() || r.problem_class.channels != wanted.channels ||
                r.problem_class.layout != wanted.layout) {
                continue;
            }
            for (const KernelRecord& k : r.kernels_seen) {
                if (k.name != kernel) continue;
                if (r.problem_class == wanted) return k.resources;
                if (!similar) similar = k.resources;
            }
        }
        return similar;
    };
}

void run_plan(const TuneCliOptions& o) {
    const std::optional<GpuModel> model = find_gpu_model(o.plan_for);
    if (!model) throw Error(fmt::format("--plan-for {}: an unknown GPU model", o.plan_for), known_gpu_model_names());
    std::vector<std::string> warnings;
    std::error_code ec;
    if (!std::filesystem::is_directory(o.results, ec)) {
        warnings.push_back(fmt::format("no results directory {} (run klab from the repository root, or give --results DIR): no "
                                       "registers recorded by earlier tunes, so no shape can be planned",
                                       o.results));
    }
    const TuningCache cache = TuningCache::load_directory(o.results, warnings);
    for (const std::string& w : warnings) fmt::print(stderr, "klab tune: warning: {}\n", w);
    std::vector<std::string> skipped;
    const std::vector<Job> jobs = jobs_of(o, skipped);
    fmt::print("search spaces on {} (cc {}.{}, {} SMs, {} threads and {} KiB shared memory per SM), minimum occupancy {}, "
               "registers and shared memory as recorded in {} (they may differ on another architecture)\n",
               model->name, model->cc_major, model->cc_minor, model->sm_count, model->max_threads_per_sm,
               model->shared_per_sm / 1024, percent_text(o.min_occupancy), o.results);
    for (const Job& job : jobs) {
        fmt::print("  {} {}\n", job.variant->name(), to_string(job.problem_class));
        const Problem problem = representative_problem(job.problem_class, *job.variant);
        try {
            print_planned_space(*job.variant, problem, o.min_occupancy,
                                offline_oracle(*model, recorded_resources(cache, *job.variant, job.problem_class)), o.verbose);
        } catch (const Error& e) {
            fmt::print("    cannot plan: {}\n", e.what());
        }
    }
    for (const std::string& s : skipped) fmt::print("  skipped {}\n", s);
}

// A progress line on the terminal, rewritten per candidate; nothing when stderr is not a terminal.
CandidateProgress terminal_progress(const std::string& label) {
    if (isatty(STDERR_FILENO) == 0) return {};
    return [label](int done, int total, const LaunchShape& shape) {
        fmt::print(stderr, "\r  {} [{}/{}] {:<12}{}", label, done, total, to_string(shape), done == total ? "\r\033[K" : "");
        std::fflush(stderr);
    };
}

// After SIGINT, SIGTERM or SIGHUP (harness/interrupt.hpp) the tuner stops at its next candidate:
// the job in progress is dropped, the records stored so far stay.
CandidateProgress stopping_on_interrupt(CandidateProgress show) {
    return [show](int done, int total, const LaunchShape& shape) {
        if (const int signal = interrupt_signal(); signal != 0) throw Interrupted(signal, "");
        if (show) show(done, total, shape);
    };
}

std::string us_text(const MeasuredCandidate& m) { return fmt::format("{:.1f}", m.us.median); }

void check_mask_sizes(const std::vector<int>& sizes) {
    for (int k : sizes) {
        if (k % 2 == 0) throw Error(fmt::format("--mask-size {}", k), "odd sides from 1 to 31");
    }
}

// --missing-only, first: the records of this GPU tuned before the code hash (2026-11-30) on the
// sources as they are now carry the hash of their files' whole text; they take the code hash
// (autotune::restamp_with_code_hash), so that a comment edit no longer makes them stale. Optional:
// where the cache cannot be written, they stay current by their full-text hash, and the tune goes on.
void restamp_unchanged_sources(const std::string& results, const GpuIdentity& gpu) {
    const auto registered = [](const std::string& name) { return source_hashes(std::string_view(name)); };
    try {
        const int restamped = restamp_with_code_hash(results, gpu, registered);
        if (restamped == 0) return;
        fmt::print("{} record(s) of this GPU carried the hash of their sources' whole text, tuned on the sources as they "
                   "are now; they now carry the hash of their code, which comment edits leave unchanged (nothing else in "
                   "them changed)\n",
                   restamped);
    } catch (const Error& e) {
        fmt::print(stderr,
                   "klab tune: warning: the records of unchanged sources keep the hash of their whole text ({}); they stay "
                   "current until a line of those files changes\n",
                   e.what());
    }
}

// --missing-only: the jobs whose class already has a record of this GPU and of the variant's
// current source (a stale record is tuned again).
void drop_tuned_jobs(std::vector<Job>& jobs, const std::string& results, const GpuIdentity& gpu) {
    std::vector<std::string> warnings;
    const TuningCache cache = TuningCache::load_directory(results, warnings);
    for (const std::string& w : warnings) fmt::print(stderr, "klab tune: warning: {}\n", w);
    const auto tuned = [&](const Job& job) {
        const Lookup found = lookup(cache, *job.variant, source_hashes(*job.variant),
                                    representative_problem(job.problem_class, *job.variant), gpu);
        return found.level == LookupLevel::exact;
    };
    const std::size_t before = jobs.size();
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(), tuned), jobs.end());
    fmt::print("{} of {} job(s) already tuned on this GPU (current sources); tuning the other {}\n", before - jobs.size(), before,
               jobs.size());
}

// --device all: one klab tune per GPU, started with this command line and --device N; the GPUs of
// one model share its classes (a record of one is a record of the other) and its cache file.
void tune_every_device(const TuneCliOptions& o) {
    if (!o.class_share.empty()) {
        throw Error(fmt::format("--class-share {} with --device all: --device all shares the classes out itself", o.class_share),
                    "one of them");
    }
    const std::vector<DeviceInfo> devices =
        requested_devices(parse_device_request("all"), query_devices(), std::getenv("CUDA_VISIBLE_DEVICES"));
    const std::vector<DeviceShare> plan = plan_tuning(devices);
    fmt::print("klab tune --device all: {} process(es), one per GPU, at once\n", plan.size());
    std::vector<DeviceJob> jobs;
    for (const DeviceShare& share : plan) {
        DeviceJob job{share, {}, fmt::format("records in {}", (std::filesystem::path(o.results) / share.slug / "autotune.json").string())};
        if (share.shares > 1) job.options.emplace_back("--class-share", fmt::format("{}/{}", share.share, share.shares));
        fmt::print("  gpu {} {}: {}\n", share.device.index, share.device.name,
                   share.shares == 1 ? std::string("every class")
                                     : fmt::format("classes {} of every {} of the list (--class-share {}/{}; {} GPUs of this "
                                                   "model share them and one cache)",
                                                   share.share, share.shares, share.share, share.shares, share.shares));
        jobs.push_back(std::move(job));
    }
    const std::vector<std::string> failed = run_per_device(jobs, own_executable());
    if (!failed.empty()) {
        throw Error(fmt::format("--device all: {} of {} tuning process(es) failed: {}", failed.size(), jobs.size(),
                                fmt::join(failed, "; ")),
                    "every GPU's tune succeeding (its lines are above, prefixed with its label)");
    }
}

void run_tune(const TuneCliOptions& o) {
    check_mask_sizes(o.mask_sizes);
    if (!o.plan_for.empty()) {
        if (!o.device.empty()) {
            throw Error(fmt::format("--device {} with --plan-for {}: the plan uses a GPU model, no device", o.device, o.plan_for),
                        "--plan-for MODEL without --device");
        }
        return run_plan(o);
    }
    const DeviceRequest request = o.device.empty() ? DeviceRequest{} : parse_device_request(o.device);
    if (!o.class_share.empty()) (void)parse_class_share(o.class_share);  // a bad share is refused before any device work
    const DeviceQuery devices = query_devices();
    if (devices.devices.empty()) {
        throw Error(fmt::format("tuning needs a CUDA GPU{}: {}", o.device.empty() ? "" : " (--device " + o.device + ")", devices.no_device_reason),
                    "a machine with a CUDA GPU, or --plan-for MODEL to plan a search space without one");
    }
    if (!request.all) (void)select_one_device(request, "klab tune");  // a missing device first, in any build
    require_timing_build("tune");
    if (!(o.budget_seconds >= 0.0)) throw Error(fmt::format("--budget-s {}", o.budget_seconds), "a time in seconds >= 0");
    if (request.all) return tune_every_device(o);
    std::vector<std::string> skipped;
    std::vector<Job> jobs = jobs_of(o, skipped);
    const GpuIdentity gpu = current_gpu_identity();
    if (o.missing_only) {
        if (!o.dry_run) restamp_unchanged_sources(o.results, gpu);
        drop_tuned_jobs(jobs, o.results, gpu);
        if (jobs.empty()) return;  // said so already
    }

    if (o.dry_run) {
        fmt::print("search spaces on {} (minimum occupancy {}, from the CUDA occupancy API)\n", gpu.key(), percent_text(o.min_occupancy));
        for (const Job& job : jobs) {
            fmt::print("  {} {}\n", job.variant->name(), to_string(job.problem_class));
            print_planned_space(*job.variant, representative_problem(job.problem_class, *job.variant), o.min_occupancy,
                                device_oracle(), o.verbose);
        }
        for (const std::string& s : skipped) fmt::print("  skipped {}\n", s);
        return;
    }

    TuneOptions options;
    options.min_occupancy = o.min_occupancy;
    options.timing.budget_seconds = o.budget_seconds;
    options.timing.min_samples = o.min_samples;
    const std::filesystem::path file = cache_file(o.results, gpu);
    fmt::print("tuning {} job(s) on {}{}; minimum occupancy {} (candidates at 50% or more are measured too, for the cost "
               "of the rule); {} s and at least {} samples per candidate, L2 flushed; results into {}\n",
               jobs.size(), gpu.key(), o.class_share.empty() ? "" : " (--class-share " + o.class_share + " of the classes)",
               percent_text(o.min_occupancy), o.budget_seconds, o.min_samples, file.string());
    std::fflush(stdout);

    Tuner tuner(options);
    std::vector<TuningRecord> done;
    std::vector<std::string> failures;
    const auto started = std::chrono::steady_clock::now();
    const GracefulStop graceful;  // a signal stops the run between candidates, never inside a store
    const auto kept = [&] { return fmt::format("{} of {} job(s) tuned and stored in {}", done.size(), jobs.size(), file.string()); };
    for (std::size_t i = 0; i < jobs.size(); ++i) {
        throw_if_interrupted(kept());
        const Job& job = jobs[i];
        const std::string label = fmt::format("[{}/{}] {} {}", i + 1, jobs.size(), job.variant->name(), to_string(job.problem_class));
        try {
            TuningRecord record = tuner.tune(*job.variant, job.problem_class, stopping_on_interrupt(terminal_progress(label)));
            std::vector<std::string> warnings;
            store(o.results, {record}, warnings);  // after every job: an interrupted run keeps what it measured
            for (const std::string& w : warnings) fmt::print(stderr, "klab tune: warning: {}\n", w);
            const MeasuredCandidate& best = record.top.front();
            fmt::print("{}: best {} {} us ({} measured, {} invalid, {} excluded){}{}\n", label, to_string(best.shape), us_text(best),
                       record.candidates_measured, record.invalid.size(), record.candidates_excluded,
                       record.default_shape ? fmt::format("; default {} {} us", to_string(record.default_shape->shape), us_text(*record.default_shape))
                                            : std::string(),
                       record.note.empty() ? std::string() : "; " + record.note);
            done.push_back(std::move(record));
        } catch (const Interrupted& e) {
            throw Interrupted(e.signal(), fmt::format("{}; {} was stopped and not stored", kept(), label));
        } catch (const CudaContextLost&) {
            throw;  // nothing more can run in this process; the records stored so far stay
        } catch (const Error& e) {
            failures.push_back(fmt::format("{} {}: {}", job.variant->name(), to_string(job.problem_class), e.what()));
            fmt::print("{}: FAILED: {}\n", label, e.what());
        }
        std::fflush(stdout);
    }
    throw_if_interrupted(kept());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    fmt::print("\n{:<20} {:<16} {:<10} {:<18} {:>10} {:>10} {:>10}  {}\n", "variant", "problem", "best", "occupancy", "median us",
               "default us", "rule cost", "best at >= 50%");
    for (const TuningRecord& r : done) {
        const MeasuredCandidate& best = r.top.front();
        fmt::print("{:<20} {:<16} {:<10} {:<18} {:>10} {:>10} {:>10}  {} {} us ({})\n", r.variant, to_string(r.problem_class),
                   to_string(best.shape), to_string(best.occupancy), us_text(best),
                   r.default_shape ? us_text(*r.default_shape) : std::string("-"),
                   r.rule_cost ? fmt::format("{:.1f}%", 100.0 * *r.rule_cost) : std::string("-"),
                   to_string(r.best_relaxed->shape), us_text(*r.best_relaxed), to_string(r.best_relaxed->occupancy));
    }
    for (const std::string& s : skipped) fmt::print("skipped {}\n", s);
    fmt::print("{} of {} job(s) tuned in {:.0f} s; records in {}\n", done.size(), jobs.size(), seconds, file.string());
    if (!failures.empty()) {
        std::string list;
        for (const std::string& f : failures) list += "\n  " + f;
        throw Error(fmt::format("{} of {} job(s) failed:{}", failures.size(), jobs.size(), list),
                    "every job finding a verified shape and storing it");
    }
}

}  // namespace

void add_tune_command(CLI::App& app) {
    auto o = std::make_shared<TuneCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "tune", "Find each variant's fastest verified block shape on this GPU and cache it per GPU model");
    cmd->add_option("--variant", o->variants, "Variant(s) to tune (default: every variant of the operations)");
    CLI::Option* op = cmd->add_option("--op", o->ops, "Operation(s) whose classes to tune: convolve, sobel, integral (default: all, "
                                                      "or the --variant ones' operations)")
                          ->check(CLI::IsMember({"convolve", "sobel", "integral"}));
    CLI::Option* size = cmd->add_option("--size", o->sizes, "Resolution bucket(s): 480p 720p HD 4K 8K")->capture_default_str();
    CLI::Option* classes =
        cmd->add_option("--class", o->class_texts,
                        "Problem class(es) to tune instead of the product of --size, --mask-size, --channels and --layout, "
                        "e.g. 8K/9x9/c3/aos, sobel/8K/c1/aos, integral/8K/c1/aos/u32")
            ->excludes(op);  // a class names its operation: an --op beside it would be ignored
    CLI::Option* mask_size = cmd->add_option("--mask-size", o->mask_sizes, "Gaussian mask side(s), odd 1..31 (convolutions)")
                                 ->check(number_from(1, 31))
                                 ->capture_default_str();
    CLI::Option* channels =
        cmd->add_option("--channels", o->channels, "Channel count(s): 1, 3, 4")->check(one_of({1, 3, 4}))->capture_default_str();
    CLI::Option* layout =
        cmd->add_option("--layout", o->layouts, "Layout(s): aos, soa")->check(CLI::IsMember({"aos", "soa"}))->capture_default_str();
    cmd->add_option("--study", o->study,
                    "The problem classes of a klab run study (full, quick or smoke), as its tuning phase takes them, instead of "
                    "the product of --size, --mask-size, --channels and --layout; --op and --variant narrow them (with "
                    "--missing-only: klab run's tuning phase alone)")
        ->check(CLI::IsMember({"full", "quick", "smoke"}))
        ->excludes(size, classes, mask_size, channels, layout);
    cmd->add_option("--min-occupancy", o->min_occupancy,
                    "Lowest theoretical occupancy a candidate may have (0.5 widens the space to 50%)")
        ->check(number_from(0.01, 1.0))
        ->capture_default_str();
    cmd->add_option("--budget-s", o->budget_seconds, "Measuring time per candidate, seconds (it stops earlier once the "
                                                     "quartiles agree within 1%)")
        ->check(number_from(0.0, 60.0))
        ->capture_default_str();
    cmd->add_option("--min-samples", o->min_samples, "Samples per candidate at least")->check(number_from(1, 100000))->capture_default_str();
    cmd->add_option("--results", o->results, "Results directory: the cache is <results>/<gpu-slug>/autotune.json")->capture_default_str();
    cmd->add_flag("--dry-run", o->dry_run, "Show the search spaces on this GPU without measuring");
    cmd->add_option("--plan-for", o->plan_for,
                    "Show the search spaces on a GPU model (A100, L4, H100, H200, RTX 4090) from recorded kernel "
                    "resources; needs no GPU");
    cmd->add_flag("--verbose", o->verbose, "With --dry-run or --plan-for: list the excluded shapes and why");
    cmd->add_flag("--missing-only", o->missing_only,
                  "Tune only the classes without a record of this GPU and of the variant's current source (first, "
                  "records tuned on the current sources before the code hash take it; see docs/tuning.md)");
    cmd->add_option("--device", o->device,
                    "The CUDA device to tune (an index as `klab info` lists them; default: the first CUDA shows), or all: one "
                    "klab tune per GPU at once, the GPUs of one model sharing its classes and its cache");
    // Set by --device all on each process it starts; not for the command line (hence no group).
    cmd->add_option("--class-share", o->class_share, "K/N: tune only classes K, K+N, K+2N, ... of the list")->group("");
    cmd->callback([o] {
        for (const std::string& text : o->class_texts) o->classes.push_back(parse_problem_class(text));
        if (!o->study.empty()) o->classes = study_classes(*o);
        run_tune(*o);
    });
}

void require_timing_build(const std::string& command) {
#if defined(KLAB_SYNC_AFTER_LAUNCH) || defined(KLAB_DEVICE_DEBUG)
    throw Error(fmt::format("klab {} in a debug build (stream synchronised after each launch, device code built with -G): its "
                            "timings are not the kernels'",
                            command),
                fmt::format("a release build: cmake --workflow --preset release, then build/release/klab {}", command));
#else
    (void)command;
#endif
}

void tune_missing_classes(const std::vector<autotune::ProblemClass>& classes, const std::string& results) {
    TuneCliOptions o;
    o.classes = classes;
    o.results = results;
    o.missing_only = true;
    run_tune(o);
}

}  // namespace klab::cli
