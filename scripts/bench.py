#!/usr/bin/env python3
"""amp-lab benchmarks: run by scripts/bench (which finds the Python with torch). Not part of the tests.

Measures, on one machine and in one run:
  1. the AMP training step, C++ (build/bin/amp-lab-bench: amp::Autocast + amp::GradScaler) against
     Python (scripts/bench_amp_step.py: torch.autocast + torch.amp.GradScaler), same LibTorch, model,
     data and thread count, the two run interleaved for several rounds: the recipe MLP and a tiny MLP,
     in fp32, bf16 and fp16 (with the scaler); median ms/step and the C++/Python ratio;
  2. the GradScaler's overhead (scale + unscale_ + step + update, minus a plain step) on a model with 100
     parameter tensors, and the host syncs per step;
  3. each lab executable's wall time (build/bin/lab*), default and --quick, and the whole quiz walk
     (amp-lab quiz --reveal) end to end, process start included;
  4. an exercise's save-to-verdict time: `amp-lab check` of an edited file with a warm build
     (--exercise-only measures just this; --exercise ID picks the exercise, default 09).
Writes markdown (stdout and bench-out/bench.md) and bench-out/bench.json.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["fp32", "bf16", "fp16"]


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def plan(device, quick):
    """(case, mode, warmup, steps) per benchmark process. Sized so a full CPU run takes a few minutes:
    on a CPU without native bf16/fp16 matmul (AVX2 only) a recipe step in 16 bits takes seconds."""
    if device == "cuda":
        p = [("recipe", m, 10, 50) for m in MODES] + [("tiny", m, 20, 200) for m in MODES]
        p.append(("scaler-overhead", "fp16", 20, 200))
    else:
        p = [("recipe", "fp32", 3, 20), ("recipe", "bf16", 1, 2), ("recipe", "fp16", 1, 2)]
        p += [("tiny", "fp32", 20, 200), ("tiny", "bf16", 3, 40), ("tiny", "fp16", 3, 40)]
        p.append(("scaler-overhead", "fp16", 10, 100))
    if quick:
        p = [(c, m, min(w, 1), max(2, s // 5) if s > 3 else 1) for c, m, w, s in p]
    return p


def shape_label(case, device):
    if case == "recipe":
        return "3 x Linear(4096), batch 512" if device == "cuda" else "3 x Linear(1024), batch 256"
    if case == "tiny":
        return "3 x Linear(256), batch 64"
    return "50 x Linear(64), batch 32 (100 param tensors)"


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def machine_info(python, bench_exe, device):
    info = {"python": python, "platform": platform.platform(), "nproc": os.cpu_count()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        flags = next((l for l in open("/proc/cpuinfo") if l.startswith("flags")), "").split()
        info["cpu_16bit_flags"] = [f for f in ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16", "f16c") if f in flags]
    except OSError:
        pass
    import torch
    info["torch"] = torch.__version__
    info["torch_dir"] = os.path.dirname(torch.__file__)
    info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
    # The C++ binary must load the LibTorch inside that same Python package.
    try:
        ldd = subprocess.run(["ldd", bench_exe], capture_output=True, text=True).stdout
        lib = next((l.split("=>")[1].split("(")[0].strip() for l in ldd.splitlines() if "libtorch_cpu.so" in l), "")
        info["cpp_libtorch_cpu"] = os.path.realpath(lib) if lib else "?"
        info["same_libtorch"] = bool(lib) and os.path.realpath(lib).startswith(os.path.realpath(info["torch_dir"]))
    except OSError:
        info["same_libtorch"] = None
    try:
        info["git"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def step_benches(args, bench_exe, device, rounds):
    results = {}
    common = ["--device", device, "--threads", str(args.threads), "--seed", "0",
              "--max-seconds", str(args.max_seconds if args.max_seconds is not None else (3 if args.quick else 10))]
    cases = [c for c in plan(device, args.quick) if not args.cases or c[0] in args.cases.split(",")]
    for r in range(rounds):
        for case, mode, warmup, steps in cases:
            key = f"{case}/{mode}"
            flags = ["--case", case, "--mode", mode, "--warmup", str(warmup), "--steps", str(steps)] + common
            cmds = {"cpp": [bench_exe] + flags, "python": [args.python, os.path.join(ROOT, "scripts", "bench_amp_step.py")] + flags}
            order = ["cpp", "python"] if r % 2 == 0 else ["python", "cpp"]  # alternate who goes first
            entry = results.setdefault(key, {"case": case, "mode": mode, "warmup": warmup, "steps": steps,
                                             "cpp": [], "python": [], "errors": []})
            if entry["errors"]:
                continue  # failed in an earlier round (say, bf16 on a GPU without it): not retried
            for impl in order:
                t0 = time.perf_counter()
                try:
                    out = run_json(cmds[impl])
                except RuntimeError as e:
                    log(f"round {r + 1}/{rounds} {key:22s} {impl:6s} FAILED: {e}")
                    entry["errors"].append(str(e))
                    break
                out["load_1min_after"] = os.getloadavg()[0]
                log(f"round {r + 1}/{rounds} {key:22s} {impl:6s} "
                    f"{out.get('median_ms', out.get('overhead_ms')):9.3f} ms  ({time.perf_counter() - t0:.1f} s)")
                entry[impl].append(out)
    return results


def summarise_steps(results, device):
    rows = []
    for key, res in results.items():
        if res["case"] == "scaler-overhead" or res["errors"]:
            continue
        s = {"key": key, "case": res["case"], "mode": res["mode"], "shape": shape_label(res["case"], device),
             "steps_per_round": res["steps"], "rounds": len(res["cpp"])}
        for impl in ("cpp", "python"):
            runs = res[impl]
            s[impl] = {
                # The headline: the median of the per-round medians (one disturbed round does not move it).
                "median_ms": median([o["median_ms"] for o in runs]),
                "best_round_median_ms": min(o["median_ms"] for o in runs),
                "pooled_median_ms": median([t for o in runs for t in o["step_ms"]]),
                "round_medians_ms": [o["median_ms"] for o in runs],
                "steps_timed": [o["steps_done"] for o in runs],
                "host_syncs_per_step": max(o["host_syncs_per_step"] for o in runs),
                "threads": sorted({o["threads"] for o in runs}),
            }
        s["ratio"] = s["cpp"]["median_ms"] / s["python"]["median_ms"]
        s["identical"] = identical(res)
        rows.append(s)
    return rows


def identical(res):
    """Same inputs, same loss before training, same weights after the warm-up steps (relative differences;
    the timed loops may stop at different counts on their time budget, so the final weights may not match)."""
    c, p = res["cpp"][0]["checksum"], res["python"][0]["checksum"]
    same_steps = res["cpp"][0]["steps_done"] == res["python"][0]["steps_done"]
    return {"inputs_equal": c["inputs"] == p["inputs"],
            "initial_loss_rel_diff": rel(c["initial_loss"], p["initial_loss"]),
            "params_after_warmup_rel_diff": rel(c["params_after_warmup"], p["params_after_warmup"]),
            "final_params_rel_diff": rel(c["final_params"], p["final_params"]) if same_steps else None,
            "threads_equal": res["cpp"][0]["threads"] == res["python"][0]["threads"]}


def summarise_overhead(results):
    res = results.get("scaler-overhead/fp16")
    if not res or res["errors"]:
        return None
    s = {"param_tensors": res["cpp"][0]["param_tensors"], "steps_per_round": res["steps"], "rounds": len(res["cpp"])}
    for impl in ("cpp", "python"):
        runs = res[impl]
        # Median over rounds of each part's per-round median (see summarise_steps); pooled for the record.
        scaler = median([o["scaler_median_ms"] for o in runs])
        plain = median([o["plain_step_median_ms"] for o in runs])
        pooled = (median([t for o in runs for t in o["scaler_ms"]]) - median([t for o in runs for t in o["plain_step_ms"]]))
        s[impl] = {"scaler_ms": scaler, "plain_step_ms": plain, "overhead_ms": scaler - plain,
                   "pooled_overhead_ms": pooled, "steps_timed": [o["steps_done"] for o in runs],
                   "round_overheads_ms": [o["overhead_ms"] for o in runs],
                   "host_syncs_per_step": max(o["host_syncs_per_step"] for o in runs),
                   "host_syncs_counted": runs[0]["host_syncs_counted"]}
    s["identical"] = identical(res)
    return s


def wall(cmd, timeout=900):
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
        code, err = r.returncode, r.stderr.strip().splitlines()[-1:] if r.stderr.strip() else []
    except subprocess.TimeoutExpired:
        code, err = "timeout", [f"killed after {timeout} s"]
    return {"seconds": time.perf_counter() - t0, "exit": code, "stderr_tail": err}


def lab_timings(build_dir, device, reps):
    labs = sorted(p for p in glob.glob(os.path.join(build_dir, "bin", "lab*")) if os.access(p, os.X_OK))
    rows = []
    for exe in labs:
        row = {"lab": os.path.basename(exe)}
        for label, extra in (("default", []), ("quick", ["--quick"])):
            runs = [wall([exe, "--device", device] + extra) for _ in range(reps)]
            row[label] = {"seconds": median([r["seconds"] for r in runs]), "runs": runs,
                          "exit": sorted({str(r["exit"]) for r in runs})}
            log(f"{row['lab']:28s} {label:7s} {row[label]['seconds']:6.2f} s  exit {','.join(row[label]['exit'])}")
        rows.append(row)
    return rows


def quiz_timing(build_dir, device, reps):
    exe = os.path.join(build_dir, "bin", "amp-lab")
    cmd = [exe, "quiz", "--reveal", "--device", device]
    if not os.access(exe, os.X_OK):
        return {"command": " ".join(cmd[1:]), "missing": True}
    runs = [wall(cmd) for _ in range(reps)]
    s = {"command": "amp-lab " + " ".join(cmd[1:]), "seconds": median([r["seconds"] for r in runs]),
         "runs": runs, "exit": sorted({str(r["exit"]) for r in runs}), "missing": False}
    log(f"quiz --reveal: {s['seconds']:.2f} s  exit {','.join(s['exit'])}")
    return s


def exercise_timing(build_dir, exercise, reps):
    """Save to verdict: `amp-lab check` of an edited file with a warm build (the lab's lab.cpp object and the
    exercises' precompiled header built, its learner executable built once before). Each edit adds a new line of
    code, so the compiler (and ccache) sees a new unit, as after a learner's save: a comment line would not do, as
    ccache hashes the preprocessed unit, which holds no comments, and would replay the last compile."""
    exe = os.path.join(build_dir, "bin", "amp-lab")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ref = glob.glob(os.path.join(root, "labs", f"{exercise}_*", "amp.cpp"))  # the lab's own AMP code
    if not os.access(exe, os.X_OK) or not ref:
        return {"exercise": exercise, "missing": True}
    work = tempfile.mkdtemp(prefix="amp-lab-bench-exercise-")
    path = os.path.join(work, os.path.basename(os.path.dirname(ref[0])) + ".cpp")
    with open(ref[0]) as f:
        text = f.read()
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"))
    def check(n):
        with open(path, "w") as f:
            f.write(text + f"[[maybe_unused]] static int amp_lab_bench_edit_{n}_{time.time_ns()} = {n};\n")
        t0 = time.perf_counter()
        r = subprocess.run([exe, "check", exercise, "--file", path, "--no-color"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, env=env, timeout=600)
        return {"seconds": time.perf_counter() - t0, "exit": r.returncode,
                "verdict": (r.stdout.strip().splitlines() or [""])[-1]}
    check(0)  # warms the build: the learner executable exists, only the edited unit compiles from here on
    runs = [check(n + 1) for n in range(reps)]
    shutil.rmtree(work, ignore_errors=True)
    s = {"exercise": exercise, "missing": False, "seconds": median([r["seconds"] for r in runs]), "runs": runs,
         "exit": sorted({str(r["exit"]) for r in runs}), "load": list(os.getloadavg())}
    log(f"exercise {exercise} save to verdict: {s['seconds']:.2f} s  exit {','.join(s['exit'])}")
    return s


def fmt_ms(x):
    return f"{x:.3f}" if x < 10 else (f"{x:.1f}" if x < 1000 else f"{x:.0f}")


def markdown(report):
    m, dev = report["machine"], report["device"]
    out = []
    out.append(f"### Machine and run\n")
    out.append(f"- Device: **{dev}**" + (f" ({m.get('gpu')}, CUDA {m.get('cuda')})" if dev == "cuda" else "") +
               f"; CPU: {m.get('cpu', '?')}, {m.get('nproc')} cores; 16-bit CPU features: "
               f"{', '.join(m.get('cpu_16bit_flags', [])) or 'none'} (ATen CPU capability {m.get('cpu_capability')})")
    out.append(f"- PyTorch {m['torch']}; the C++ binary loads `{m.get('cpp_libtorch_cpu')}` "
               f"({'the same LibTorch as the Python package' if m.get('same_libtorch') else 'NOT the Python package LibTorch'})")
    out.append(f"- Threads: {report['threads']} on both sides (torch::set_num_threads / torch.set_num_threads)")
    la0, la1 = report["load_before"], report["load_after"]
    out.append(f"- Load average (1/5/15 min): {la0[0]:.2f} / {la0[1]:.2f} / {la0[2]:.2f} before, "
               f"{la1[0]:.2f} / {la1[1]:.2f} / {la1[2]:.2f} after" +
               (f"; 1-min load after each step-benchmark process: {report['load_during_steps'][0]:.2f} to "
                f"{report['load_during_steps'][1]:.2f}" if report.get("load_during_steps") else ""))
    out.append(f"- {report['rounds']} interleaved round(s){' (--quick)' if report['quick'] else ''}; "
               f"run {report['started']} at commit {m.get('git', '?')}; took {report['total_seconds']:.0f} s\n")

    if report["steps"]:
        out.append("### AMP training step: median ms/step, C++ vs Python\n")
        out.append("C++ ms and Python ms: the median of the per-round medians (each round runs both, interleaved); "
                   "every round's median follows.\n")
        out.append("| case | model | mode | C++ ms | Python ms | C++/Python | Python − C++ ms | C++ round medians "
                   "| Python round medians | host syncs/step C++ / Py | same result |")
        out.append("|---|---|---|---:|---:|---:|---:|---|---|---|---|")
    for s in report["steps"]:
        ident = s["identical"]
        same = "yes" if ident["inputs_equal"] and ident["threads_equal"] and ident["initial_loss_rel_diff"] == 0 else "**no**"
        same += f" (weights after warm-up: rel. diff {ident['params_after_warmup_rel_diff']:.0e})"
        rm = lambda xs: ", ".join(fmt_ms(x) for x in xs)
        out.append(f"| {s['case']} | {s['shape']} | {s['mode']}{' + scaler' if s['mode'] == 'fp16' else ''} | "
                   f"{fmt_ms(s['cpp']['median_ms'])} | {fmt_ms(s['python']['median_ms'])} | **{s['ratio']:.2f}** | "
                   f"{s['python']['median_ms'] - s['cpp']['median_ms']:.3f} | "
                   f"{rm(s['cpp']['round_medians_ms'])} | {rm(s['python']['round_medians_ms'])} | "
                   f"{s['cpp']['host_syncs_per_step']:g} / {s['python']['host_syncs_per_step']:g} | {same} |")
    for key, res in report["raw"].items():
        if res["errors"]:
            out.append(f"\nNot measured: {key}: `{res['errors'][0].splitlines()[0][:300]}`")
    out.append("")

    o = report["overhead"]
    if o:
        out.append(f"### GradScaler overhead: {o['param_tensors']} parameter tensors, fp16 autocast, medians in ms\n")
        out.append("Each part: the median of the per-round medians; the overhead is their difference.\n")
        out.append("| | C++ (amp::GradScaler) | Python (torch.amp.GradScaler) | C++/Python |")
        out.append("|---|---:|---:|---:|")
        c, p = o["cpp"], o["python"]
        out.append(f"| scale + unscale_ + step + update | {c['scaler_ms']:.3f} | {p['scaler_ms']:.3f} | {c['scaler_ms'] / p['scaler_ms']:.2f} |")
        out.append(f"| plain optimizer.step() | {c['plain_step_ms']:.3f} | {p['plain_step_ms']:.3f} | {c['plain_step_ms'] / p['plain_step_ms']:.2f} |")
        out.append(f"| **overhead** (difference) | **{c['overhead_ms']:.3f}** | **{p['overhead_ms']:.3f}** | "
                   f"**{c['overhead_ms'] / p['overhead_ms']:.2f}** |" if p['overhead_ms'] > 0 else
                   f"| **overhead** (difference) | **{c['overhead_ms']:.3f}** | **{p['overhead_ms']:.3f}** | n/a |")
        out.append(f"| overhead per round | {', '.join(f'{x:.3f}' for x in c['round_overheads_ms'])} | "
                   f"{', '.join(f'{x:.3f}' for x in p['round_overheads_ms'])} | |")
        out.append(f"| host syncs per step | {c['host_syncs_per_step']:g} | {p['host_syncs_per_step']:g} | |")
        out.append("")
        out.append(f"Host syncs counted: C++: {c['host_syncs_counted']}; Python: {p['host_syncs_counted']}.\n")

    out.append(f"### Wall time of each lab (`--device {dev}`, process start included), seconds\n")
    if report.get("labs_build_dir"):
        out.append(f"Executables from `{os.path.relpath(report['labs_build_dir'], ROOT)}/bin`.\n")
    if report.get("labs_build_dir") is None:
        out.append("Skipped (--skip-labs).")
    elif report["labs"]:
        out.append("| lab | default | --quick | exit codes (default / quick) |")
        out.append("|---|---:|---:|---|")
        for row in report["labs"]:
            out.append(f"| {row['lab']} | {row['default']['seconds']:.2f} | {row['quick']['seconds']:.2f} | "
                       f"{','.join(row['default']['exit'])} / {','.join(row['quick']['exit'])} |")
    else:
        out.append("No lab executables found in the build folder.")
        for row in report["labs"]:
            for label in ("default", "quick"):
                bad = [r for r in row[label]["runs"] if str(r["exit"]) != "0"]
                if bad:
                    out.append(f"\n{row['lab']} ({label}) exited {bad[0]['exit']}: `{' '.join(bad[0]['stderr_tail'])}`")
    out.append("")
    q = report["quiz"]
    out.append("### The whole quiz walk, end to end\n")
    if q.get("skipped"):
        out.append("Skipped (--skip-labs).\n")
    elif q.get("missing"):
        out.append(f"`{q['command']}`: amp-lab not built in this build folder; not measured.\n")
    else:
        runs = ", ".join(f"{r['seconds']:.2f}" for r in q["runs"])
        out.append(f"`{q['command']}`: **{q['seconds']:.2f} s** (median of {len(q['runs'])}; runs: "
                   f"{runs}; exit {','.join(q['exit'])})\n")
        bad = [r for r in q["runs"] if str(r["exit"]) != "0"]
        if bad:
            out.append(f"The walk exited {bad[0]['exit']}: `{' '.join(bad[0]['stderr_tail'])}`\n")

    x = report.get("exercise")
    out.append("### An exercise, from saving the file to the verdict (`amp-lab check`, warm build)\n")
    if not x or x.get("missing"):
        out.append("Not measured (--skip-labs, or amp-lab or the exercises not built).\n")
    else:
        runs = ", ".join(f"{r['seconds']:.2f}" for r in x["runs"])
        out.append(f"`amp-lab check {x['exercise']}` after an edit: **{x['seconds']:.2f} s** (median of "
                   f"{len(x['runs'])}; runs: {runs}; exit {','.join(x['exit'])}; verdict: "
                   f"\"{x['runs'][-1]['verdict']}\"; load average {x['load'][0]:.2f})\n")

    out.append("### Goals\n")
    out.append("| goal | measured | met |")
    out.append("|---|---|---|")
    for g in report["goals"]:
        out.append(f"| {g['goal']} | {g['measured']} | {'yes' if g['met'] else ('n/a' if g['met'] is None else '**no**')} |")
    return "\n".join(out) + "\n"


def goals(report, tiny_target=0.8):
    g = []
    steps = report["steps"]
    if steps:
        worst = max(steps, key=lambda s: s["ratio"])
        g.append({"goal": "C++/Python <= 1.0 in every case",
                  "measured": f"worst {worst['ratio']:.2f} ({worst['key']})", "met": worst["ratio"] <= 1.0})
        tiny = [s for s in steps if s["case"] == "tiny"]
        if tiny:
            g.append({"goal": f"tiny MLP well below 1.0 (taken as <= {tiny_target})",
                      "measured": ", ".join(f"{s['mode']} {s['ratio']:.2f}" for s in tiny),
                      "met": all(s["ratio"] <= tiny_target for s in tiny)})
    o = report["overhead"]
    if o:
        g.append({"goal": "scaler overhead C++ <= Python",
                  "measured": f"{o['cpp']['overhead_ms']:.3f} ms vs {o['python']['overhead_ms']:.3f} ms",
                  "met": o["cpp"]["overhead_ms"] <= o["python"]["overhead_ms"]})
        g.append({"goal": "1 host sync per scaler step",
                  "measured": f"C++ {o['cpp']['host_syncs_per_step']:g}, Python {o['python']['host_syncs_per_step']:g}",
                  "met": o["cpp"]["host_syncs_per_step"] == 1})
    x = report.get("exercise")
    if x and not x.get("missing"):
        g.append({"goal": "exercise save to verdict <= 10 s (warm build)",
                  "measured": f"{x['seconds']:.2f} s (exit {','.join(x['exit'])})",
                  "met": x["seconds"] <= 10 and x["exit"] == ["0"]})
    q = report["quiz"]
    if q.get("missing"):
        g.append({"goal": "quiz walk (--reveal) under 20 s",
                  "measured": "skipped" if q.get("skipped") else "amp-lab not built", "met": None})
    else:
        g.append({"goal": "quiz walk (--reveal) under 20 s", "measured": f"{q['seconds']:.2f} s (exit {','.join(q['exit'])})",
                  "met": q["seconds"] < 20 and q["exit"] == ["0"]})
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one round, few steps: a smoke run")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"), help="configured build folder (default build/)")
    ap.add_argument("--labs-build-dir", help="take the lab executables and amp-lab from this build folder instead "
                    "(default: --build-dir)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds (default 3, --quick 1)")
    ap.add_argument("--cases", help="comma-separated subset of recipe,tiny,scaler-overhead (default: all)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="intra-op threads on both sides (default: all cores)")
    ap.add_argument("--max-seconds", type=float, help="time budget of one benchmark process's timed loop "
                    "(at least 3 steps); default 10, --quick 3; 0: none")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench-out"), help="output folder (default bench-out/)")
    ap.add_argument("--no-build", action="store_true", help="do not run cmake --build --target amp-lab-bench")
    ap.add_argument("--skip-steps", action="store_true", help="skip the C++/Python step benchmarks")
    ap.add_argument("--skip-labs", action="store_true", help="skip the lab and quiz wall times")
    ap.add_argument("--exercise-only", action="store_true", help="measure only an exercise's save-to-verdict time")
    ap.add_argument("--exercise", default="09", help="the exercise whose save-to-verdict time is measured (default 09)")
    ap.add_argument("--python", default=sys.executable, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.exercise_only:
        args.skip_steps = args.no_build = True
    if args.cases and not set(args.cases.split(",")) <= {"recipe", "tiny", "scaler-overhead"}:
        sys.exit(f"bench: error: --cases '{args.cases}': expected names from recipe,tiny,scaler-overhead")
    build_dir = os.path.abspath(args.build_dir)
    if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
        sys.exit(f"bench: error: {build_dir} is not a configured build folder (run scripts/setup, or pass --build-dir)")
    import torch
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench: error: --device cuda, but this torch sees no CUDA device")
    rounds = args.rounds or (1 if args.quick else 3)
    bench_exe = os.path.join(build_dir, "bin", "amp-lab-bench")
    start = time.perf_counter()
    if not args.no_build:
        log(f"cmake --build {build_dir} --target amp-lab-bench")
        r = subprocess.run(["cmake", "--build", build_dir, "--target", "amp-lab-bench"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
            sys.exit("bench: error: building amp-lab-bench failed")

    report = {"device": device, "quick": args.quick, "rounds": rounds, "threads": args.threads,
              "build_dir": build_dir, "started": datetime.datetime.now().isoformat(timespec="seconds"),
              "load_before": list(os.getloadavg()),
              "machine": machine_info(args.python, bench_exe, device)}
    raw = {} if args.skip_steps else step_benches(args, bench_exe, device, rounds)
    report["steps"] = summarise_steps(raw, device)
    loads = [o["load_1min_after"] for res in raw.values() for impl in ("cpp", "python") for o in res[impl]]
    report["load_during_steps"] = [min(loads), max(loads)] if loads else None
    report["overhead"] = summarise_overhead(raw)
    if args.exercise_only:
        report["labs"], report["quiz"] = [], {"command": "amp-lab quiz --reveal", "missing": True, "skipped": True}
        report["exercise"] = exercise_timing(os.path.abspath(args.labs_build_dir or build_dir), args.exercise,
                                             reps=1 if args.quick else 3)
    elif args.skip_labs:
        report["labs"], report["quiz"] = [], {"command": "amp-lab quiz --reveal", "missing": True, "skipped": True}
    else:
        labs_dir = os.path.abspath(args.labs_build_dir or build_dir)
        report["labs_build_dir"] = labs_dir
        report["labs"] = lab_timings(labs_dir, device, reps=1)
        report["quiz"] = quiz_timing(labs_dir, device, reps=1 if args.quick else 3)
        report["exercise"] = exercise_timing(labs_dir, args.exercise, reps=1 if args.quick else 3)
    report["load_after"] = list(os.getloadavg())
    report["total_seconds"] = time.perf_counter() - start
    report["goals"] = goals(report)
    report["raw"] = raw

    md = markdown(report)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(report, f, indent=1)
    sys.stdout.write(md)
    log(f"wrote {os.path.join(args.out, 'bench.md')} and bench.json in {report['total_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
