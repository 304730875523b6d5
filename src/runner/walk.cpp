#include "runner/walk.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include "lab/cli.h"
#include "lab/registry.h"
#include "lab/text.h"

namespace runner {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;  // the first signal's number, 0 while none came
volatile std::sig_atomic_t g_signals = 0;      // how many came

void on_signal(int signo) {
  if (!g_interrupted) g_interrupted = signo;
  g_signals = g_signals + 1;
  if (g_signals == 2) {
    static const char msg[] = "\namp-lab: stopping after the running lab; once more to stop at once\n";
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  } else if (g_signals >= 3) {  // a lab that does not return soon: end now, as the signal would by default
    std::signal(signo, SIG_DFL);
    std::raise(signo);
  }
}

const char* signal_reason() {
  return g_interrupted == SIGTERM ? "terminated" : g_interrupted == SIGHUP ? "hang-up" : "interrupted";
}

// The --json file, opened before the walk so a bad path costs nothing; O_NONBLOCK so that a FIFO
// without a reader is refused instead of waiting forever.
class JsonFile {
 public:
  explicit JsonFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd_ < 0) throw lab::UsageError(fmt::format("--json: cannot write {}: {}", lab::quote(path), std::strerror(errno)));
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  }
  ~JsonFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  JsonFile(const JsonFile&) = delete;
  JsonFile& operator=(const JsonFile&) = delete;

  void write(const std::string& text) {
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail();
      done += static_cast<size_t>(n);
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail();
  }

 private:
  [[noreturn]] void fail() const {
    throw lab::OutputError(fmt::format("--json: writing {} failed: {}", lab::quote(path_), std::strerror(errno)));
  }
  std::string path_;
  int fd_ = -1;
};

enum class Outcome { Right, Wrong, Skipped, NotAsked };

struct Answered {
  explicit Answered(const Question* q) : question(q) {}
  const Question* question;
  Outcome outcome = Outcome::NotAsked;
  int chosen = -1;
  std::optional<lab::Report> report;
  std::string lab_error;
};

char letter(int index) { return static_cast<char>('a' + index); }

std::map<std::string, std::string> values_of(const Answered& a) {
  std::map<std::string, std::string> values;
  if (a.report) {
    for (const auto& o : a.report->observations()) {
      values[o.key] = o.text;
      values[o.key + ":value"] = o.unit == "%"   ? lab::percent(o.value / 100.0, 2)
                                 : o.unit == "x" ? fmt::format("{:.{}f}x", o.value, o.value >= 100 ? 0 : 2)
                                                 : lab::num(o.value, 3) + o.unit;
    }
  }
  std::string templates = a.question->explanation + a.question->hint;
  for (const auto& [index, why] : a.question->why_not) templates += why;
  for (const auto& name : placeholders(templates)) values.emplace(name, "(not measured: the lab failed)");
  return values;
}

void print_question(const Question& q, std::ostream& out, const lab::Style& style, bool mark_answer) {
  out << "\n" << style.bold(fmt::format("Q{}. {}", q.number, q.prompt)) << "\n";
  for (size_t k = 0; k < q.options.size(); ++k) {
    const bool correct = mark_answer && static_cast<int>(k) == q.answer;
    std::string line = fmt::format("  {}) {}", letter(static_cast<int>(k)), q.options[k]);
    out << (correct ? style.green(line + "   <- answer") : line) << "\n";
  }
}

void print_explanation(const Answered& a, std::ostream& out, const lab::Style& style) {
  const Question& q = *a.question;
  out << fmt::format("The answer is {}) {}\n", letter(q.answer), q.options[q.answer]);
  const auto values = values_of(a);
  out << lab::wrap("Why: " + fill(q.explanation, values), /*width=*/100, /*indent=*/"     ") << "\n";
  for (const auto& [index, why] : q.why_not)
    out << lab::wrap(fmt::format("Not {}) {}: {}", letter(index), q.options[index], fill(why, values)),
                     /*width=*/100, /*indent=*/"     ")
        << "\n";
  if (a.report && !a.report->passed())
    out << style.yellow(fmt::format("Note: only {}/{} of this lab's checks held on this machine; read its numbers with care.",
                                    a.report->checks_passed(), a.report->checks().size()))
        << "\n";
}

// One line typed at a prompt, without surrounding blanks; nullopt at end of input or on a signal (the
// reason goes to stop_reason).
std::optional<std::string> read_reply(std::istream& in, std::ostream& out, std::string* stop_reason) {
  std::string line;
  if (!std::getline(in, line)) {
    *stop_reason = g_interrupted ? signal_reason() : "end of input";
    out << "\n";
    return std::nullopt;
  }
  const auto first = line.find_first_not_of(" \t\r");
  const auto last = line.find_last_not_of(" \t\r");
  return first == std::string::npos ? "" : line.substr(first, last - first + 1);
}

// Reads one answer. Returns the option index, -1 for skip, or nullopt to stop (q, EOF, Ctrl-C).
std::optional<int> ask(const Answered& a, std::istream& in, std::ostream& out, const lab::Style& style,
                       std::string* stop_reason) {
  const Question& q = *a.question;
  const int n = static_cast<int>(q.options.size());
  for (;;) {
    out << fmt::format("Your answer [a-{}; s skip, h hint, q quit]: ", letter(n - 1)) << std::flush;
    const std::optional<std::string> reply = read_reply(in, out, stop_reason);
    if (!reply) return std::nullopt;
    const std::string& word = *reply;
    if (word.size() == 1) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(word[0])));
      if (c >= 'a' && c < 'a' + n) return c - 'a';
      if (c == 's') return -1;
      if (c == 'q') {
        *stop_reason = "quit";
        return std::nullopt;
      }
      if (c == 'h') {
        out << style.dim(lab::wrap("Hint: " + fill(q.hint, values_of(a)), /*width=*/100, /*indent=*/"      ")) << "\n";
        continue;
      }
    }
    out << fmt::format("Please answer with one letter a-{} (or s to skip, h for a hint, q to quit); got {}.\n",
                       letter(n - 1), lab::quote(word, /*max_glyphs=*/20));
  }
}

// Between questions, so the explanation stays on screen until the learner has read it. Returns false
// to stop the walk (q, EOF, Ctrl-C).
bool pause(std::istream& in, std::ostream& out, const lab::Style& style, std::string* stop_reason) {
  out << "\n" << style.dim("Enter: next lab, q: quit ") << std::flush;
  const std::optional<std::string> reply = read_reply(in, out, stop_reason);
  if (!reply) return false;
  if (!reply->empty() && std::tolower(static_cast<unsigned char>(reply->front())) == 'q') {
    *stop_reason = "quit";
    return false;
  }
  return true;
}

nlohmann::json to_json(const std::vector<Answered>& walked, const WalkOptions& options, int right, bool completed,
                       bool all_passed) {
  nlohmann::json j;
  j["torch_version"] = TORCH_VERSION;
  if (!options.track.empty()) j["track"] = options.track;
  j["device"] = options.ctx.device.str();
  j["dtype"] = lab::short_name(options.ctx.dtype);
  j["seed"] = options.ctx.seed;
  j["quick"] = options.ctx.quick;
  j["completed"] = completed;
  j["score"] = right;
  j["questions"] = nlohmann::json::array();
  for (const auto& a : walked) {
    static const char* names[] = {"right", "wrong", "skipped", "not asked"};
    nlohmann::json q = {{"number", a.question->number}, {"id", a.question->id}, {"lab", a.question->lab},
                        {"correct", std::string(1, letter(a.question->answer))},
                        {"outcome", names[static_cast<int>(a.outcome)]}};
    if (a.chosen >= 0) q["answer"] = std::string(1, letter(a.chosen));
    if (a.report) {
      q["report"] = a.report->to_json();
      const auto values = values_of(a);
      q["explanation"] = fill(a.question->explanation, values);
      for (const auto& [index, why] : a.question->why_not)
        q["why_not"][std::string(1, letter(index))] = fill(why, values);
    }
    if (!a.lab_error.empty()) q["lab_error"] = a.lab_error;
    j["questions"].push_back(std::move(q));
  }
  j["all_checks_passed"] = all_passed;
  return j;
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns, and the walk prints its summary
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) sigaction(signo, &sa, nullptr);
}

int walk(const Quiz& quiz, const WalkOptions& options, std::istream& in, std::ostream& out) {
  const lab::Style style{options.color};
  std::vector<Answered> walked;
  for (const auto& q : quiz.questions)
    if (options.only.empty() || std::find(options.only.begin(), options.only.end(), q.number) != options.only.end())
      walked.emplace_back(&q);
  if (options.answers && options.answers->size() != walked.size())
    throw lab::UsageError(fmt::format("--answers has {} letters for {} questions", options.answers->size(), walked.size()));
  std::optional<JsonFile> json;
  if (options.json_path) json.emplace(*options.json_path);

  out << style.bold(quiz.title) << "\n";
  // The default track goes unannounced, so `amp-lab quiz` reads as it always has.
  if (!options.track.empty() && !quiz.tracks.empty() && options.track != quiz.tracks.front().id) {
    std::string title = "every question of every track";
    for (const auto& t : quiz.tracks)
      if (t.id == options.track) title = t.title;
    out << fmt::format("Track {}: {} ({} questions)\n", options.track, title, walked.size());
  }
  if (!quiz.intro.empty() && !options.reveal) out << quiz.intro << "\n";
  out << fmt::format("device {} · dtype {} · LibTorch {} · seed {}{}\n", options.ctx.device.str(),
                     lab::short_name(options.ctx.dtype), TORCH_VERSION, options.ctx.seed,
                     options.ctx.quick ? " · quick mode" : "");
  if (!options.device_notice.empty()) out << options.device_notice << "\n";

  std::string stop_reason;
  int right = 0, wrong = 0, skipped = 0;
  for (size_t i = 0; i < walked.size() && stop_reason.empty(); ++i) {
    if (g_interrupted) {  // a signal while the quiz loaded, or during the pause
      stop_reason = signal_reason();
      break;
    }
    // Nothing is worth running when no one can read it (stdout on a full disk, a closed pipe).
    if (!out.flush()) throw lab::OutputError("cannot write to standard output");
    Answered& a = walked[i];
    const lab::LabInfo* info = lab::find_lab(a.question->lab);
    out << "\n" << style.bold(fmt::format("━━ {}/{} · lab {} · {} ━━", i + 1, walked.size(), a.question->lab,
                                          info ? info->source : "?")) << "\n" << std::flush;
    try {
      if (!info) throw std::runtime_error("no lab named '" + a.question->lab + "'");
      a.report = lab::run_lab(*info, options.ctx);
      // Observe first: what the lab measured, under its neutral heading. The checks state the answer,
      // so they wait until the learner has answered (--reveal shows everything at once).
      const lab::Part part = options.reveal ? lab::Part::All : lab::Part::Measured;
      out << a.report->render_text({.color = options.color, .part = part, .heading = info->heading});
    } catch (const std::exception& e) {
      a.lab_error = lab::one_line(e);
      out << style.red("The lab failed: " + a.lab_error) << "\n";
    }
    if (g_interrupted) {
      stop_reason = signal_reason();
      break;
    }
    print_question(*a.question, out, style, options.reveal);
    if (options.reveal) {
      print_explanation(a, out, style);
      continue;
    }
    std::optional<int> choice;
    if (options.answers) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>((*options.answers)[i])));
      choice = c == 's' ? -1 : c - 'a';
      out << "Your answer: " << c << " (scripted)\n";
    } else {
      choice = ask(a, in, out, style, &stop_reason);
      if (!choice) break;
    }
    a.chosen = *choice;
    if (a.chosen < 0) {
      a.outcome = Outcome::Skipped;
      ++skipped;
      out << style.yellow("Skipped.") << "\n";
    } else if (a.chosen == a.question->answer) {
      a.outcome = Outcome::Right;
      ++right;
      out << style.green("Right!") << "\n";
    } else {
      a.outcome = Outcome::Wrong;
      ++wrong;
      out << style.red(fmt::format("Not quite: you chose {}.", letter(a.chosen))) << "\n";
    }
    if (a.report) {
      out << a.report->render_text({.color = options.color, .part = lab::Part::Details});
      out << "\n" << a.report->render_text({.color = options.color, .part = lab::Part::Verdict});
    }
    print_explanation(a, out, style);
    if (options.pause && i + 1 < walked.size() && !pause(in, out, style, &stop_reason)) break;
  }

  // Summary.
  const bool completed = stop_reason.empty();
  if (!completed) out << "\n" << style.yellow("Stopped (" + stop_reason + ").") << "\n";
  std::vector<std::vector<std::string>> rows;
  bool all_passed = true, any_lab_error = false;
  int labs_run = 0;
  for (const auto& a : walked) {
    std::string checks = "not run";
    if (a.report) {
      ++labs_run;
      checks = fmt::format("{}/{} {}", a.report->checks_passed(), a.report->checks().size(),
                           a.report->passed() ? "pass" : "FAIL");
      all_passed &= a.report->passed();
    } else if (!a.lab_error.empty()) {
      checks = "lab failed";
      all_passed = false;
      any_lab_error = true;
    }
    static const char* marks[] = {" (right)", " (wrong)", "", ""};
    std::string yours = a.outcome == Outcome::Skipped ? "skipped"
                        : a.chosen >= 0 ? std::string(1, letter(a.chosen)) + marks[static_cast<int>(a.outcome)]
                                        : "-";
    rows.push_back({std::to_string(a.question->number), a.question->id, options.reveal ? "-" : yours,
                    std::string(1, letter(a.question->answer)), checks});
  }
  out << "\n" << style.bold("Summary") << "\n";
  for (const auto& line : lab::format_table({"#", "question", "your answer", "correct", "lab checks"}, rows))
    out << "  " << line << "\n";
  if (!options.reveal)
    out << style.bold(fmt::format("Score: {}/{} right", right, walked.size()))
        << fmt::format(" ({} wrong, {} skipped{})", wrong, skipped,
                       completed ? "" : fmt::format(", {} not reached", walked.size() - right - wrong - skipped))
        << "\n";
  out << fmt::format("Lab checks: {} in all {} labs run\n", all_passed ? "held" : "did NOT all hold", labs_run);

  if (json)  // quiz text is UTF-8 (checked on load); replace keeps the file whole should a lab's text not be
    json->write(to_json(walked, options, right, completed, all_passed)
                    .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (g_interrupted) return 128 + g_interrupted;
  if (any_lab_error) return lab::kExitLabError;
  return all_passed ? lab::kExitPass : lab::kExitCheckFailed;
}

}  // namespace runner
