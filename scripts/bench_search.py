#!/usr/bin/env python3
"""Search quality side by side with Optuna (issue 41, item 5).

Runs `cargo bench -p server --bench search_quality` (our grid, random and
TPE samplers, and early stopping on synthetic learning curves), then
Optuna's TPESampler (its defaults: multivariate in Optuna 5, and
independent) and RandomSampler on the same functions, spaces, noise,
budgets and seeds, and prints one table: the median best-found regret per
(function, sampler) over the seeds, with the verdicts

  - ours TPE no worse than Optuna TPE: our median at most 1.1 x Optuna's
    (the matching variant: multivariate against Optuna's default,
    independent against multivariate=False);
  - clearly better than random: our TPE's median at most half of Optuna's
    RandomSampler's,

and the early-stopping figures: the share of the trial-steps of running
every trial to the end that ASHA / median stopping spent, and where the
configuration it picked ranks among all (target: top 10% within 40%).

Optuna comes from PyPI into a virtual environment under
~/.cache/paddlecloud/pyvenv-search (made on first use).

  scripts/bench_search.py [--seeds 100] [--trials 50] [--json OURS.json] [--jobs N]

100 seeds by default: a median over 30 moves by +-25% from one seed set to
the next (our random search and Optuna's, the same algorithm, differ by that
much), enough to flip a 1.1x verdict either way. About 6 minutes on 2 cores,
nearly all of it Optuna's.
"""
import argparse, json, math, os, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path(os.environ.get("PADDLECLOUD_TOOLS", Path.home() / ".cache/paddlecloud"))
VENV = TOOLS / "pyvenv-search"
OPTUNA = "optuna==5.0.0"


def in_venv():
    """Re-runs this script with the venv's Python (made, with Optuna, on first use)."""
    python = VENV / "bin/python"
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    if not python.exists() or subprocess.run([python, "-c", "import optuna"],
                                             capture_output=True).returncode:
        print(f"==> making {VENV} with {OPTUNA}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", OPTUNA], check=True)
    os.execv(python, [python, __file__, *sys.argv[1:]])


M = (1 << 64) - 1


def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & M
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return x, z ^ (z >> 31)


def noise(seed, trial):
    """The bench's noise: a standard normal number fixed by (seed, trial)."""
    state = ((seed << 32) ^ trial) & M
    state, a = splitmix(state)
    state, b = splitmix(state)
    u1 = ((a >> 11) + 1) / 2**53
    u2 = (b >> 11) / 2**53
    return math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)


def branin(v):
    x1, x2 = v["x1"], v["x2"]
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 * x1 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


ALPHA = [1.0, 1.2, 3.0, 3.2]
A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
     [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
P = [[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
     [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
     [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
     [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]]


def hartmann6(v):
    x = [v[f"x{i}"] for i in range(6)]
    return -sum(ALPHA[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(6)))
                for i in range(4))


def quadratic(v):
    opt = {"adam": 0.0, "rmsprop": 0.5}.get(v["optimizer"], 1.0)
    return (v["x"] ** 2 + v["y"] ** 2 + (math.log10(v["lr"]) + 3) ** 2
            + (math.log2(v["batch"]) - 4) ** 2 / 4 + opt)


TRUTH = {"branin": branin, "hartmann6": hartmann6, "noisy_quadratic": quadratic}


def suggest(trial, space):
    values = {}
    for p in space:
        if p["type"] == "float":
            values[p["name"]] = trial.suggest_float(p["name"], p["min"], p["max"], log=p.get("log", False))
        elif p["type"] == "int":
            values[p["name"]] = trial.suggest_int(p["name"], p["min"], p["max"], log=p.get("log", False))
        elif p["type"] == "enum":
            values[p["name"]] = trial.suggest_categorical(p["name"], p["choices"])
        else:
            values[p["name"]] = trial.suggest_categorical(p["name"], [False, True])
    return values


def optuna_run(job):
    """One Optuna search; the regret of the trial it would pick (best observed)."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    import warnings
    warnings.simplefilter("ignore")
    name, fn, sampler_name, seed, trials = job
    truth = TRUTH[name]
    space, noise_sd, minimum = fn["space"], fn["noise"], fn["minimum"]
    if sampler_name == "optuna_tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)
    elif sampler_name == "optuna_tpe_independent":
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=False)
    else:
        sampler = optuna.samplers.RandomSampler(seed=seed)
    study = optuna.create_study(sampler=sampler, direction="minimize")
    best = None
    for _ in range(trials):
        trial = study.ask()
        values = suggest(trial, space)
        true = truth(values)
        observed = true + noise_sd * noise(seed, trial.number)
        study.tell(trial, observed)
        if best is None or observed < best[0]:
            best = (observed, true)
    return name, sampler_name, seed, best[1] - minimum


def median(xs):
    return statistics.median(xs)


def quartiles(xs):
    q = statistics.quantiles(xs, n=4)
    return q[0], q[2]


def main():
    in_venv()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--json", help="our bench's output, instead of running it")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()

    if args.json:
        ours = json.loads(Path(args.json).read_text())
    else:
        print("==> cargo bench -p server --bench search_quality", file=sys.stderr)
        out = subprocess.run(
            ["cargo", "bench", "--locked", "-p", "server", "--bench", "search_quality", "--",
             "--seeds", str(args.seeds), "--trials", str(args.trials)],
            cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
        ours = json.loads(out.strip().splitlines()[-1])
    seeds, trials = ours["seeds"], ours["trials"]

    import multiprocessing
    jobs = [(name, fn, s, seed, trials)
            for name, fn in ours["functions"].items()
            for s in ("optuna_tpe", "optuna_tpe_independent", "optuna_random")
            for seed in range(seeds)]
    print(f"==> Optuna: {len(jobs)} searches of {trials} trials", file=sys.stderr)
    t0 = time.time()
    with multiprocessing.Pool(args.jobs) as pool:
        results = pool.map(optuna_run, jobs, chunksize=1)
    print(f"    {time.time() - t0:.0f} s", file=sys.stderr)
    regrets = {name: dict(fn["regrets"]) for name, fn in ours["functions"].items()}
    for name, sampler, seed, r in results:
        regrets[name].setdefault(sampler, [None] * seeds)[seed] = r

    import optuna
    print(f"Median best-found regret over {seeds} seeds, {trials} trials each "
          f"(Optuna {optuna.__version__}; lower is better)\n")
    order = ["ours_tpe", "optuna_tpe", "ours_tpe_independent", "optuna_tpe_independent",
             "ours_random", "optuna_random", "ours_grid"]
    print(f"{'function':<16} {'sampler':<24} {'median':>10} {'q25':>10} {'q75':>10}")
    verdicts = []
    for name, by in regrets.items():
        grid = ours["functions"][name]["grid"]
        for s in order:
            xs = by[s]
            lo, hi = quartiles(xs)
            label = s + (f" ({grid['points']} pts)" if s == "ours_grid" else "")
            print(f"{name:<16} {label:<24} {median(xs):>10.4f} {lo:>10.4f} {hi:>10.4f}")
        print()
        for ours_s, theirs_s in (("ours_tpe", "optuna_tpe"),
                                 ("ours_tpe_independent", "optuna_tpe_independent")):
            m_ours, m_theirs = median(by[ours_s]), median(by[theirs_s])
            m_random = median(by["optuna_random"])
            no_worse = m_ours <= 1.1 * m_theirs
            better = m_ours <= 0.5 * m_random
            verdicts.append((name, ours_s, theirs_s, m_ours / m_theirs if m_theirs else math.inf,
                             no_worse, m_ours / m_random if m_random else math.inf, better))
    print(f"{'function':<16} {'ours vs Optuna':<46} {'ratio':>6}  {'<=1.1x':<6} "
          f"{'vs random':>9}  {'<=0.5x':<6}")
    for name, o, t, ratio, ok1, rr, ok2 in verdicts:
        print(f"{name:<16} {o + ' / ' + t:<46} {ratio:>6.2f}  {'PASS' if ok1 else 'FAIL':<6} "
              f"{rr:>9.2f}  {'PASS' if ok2 else 'FAIL':<6}")

    es = ours["early_stopping"]
    print(f"\nEarly stopping: {es['configurations']} random configurations of {es['max_step']} "
          f"steps, {es['workers']} at once, {seeds} seeds (target: top 10% within 40% of the steps)\n")
    print(f"{'rule':<8} {'steps spent':>12} {'picked rank':>12} {'top 10% in':>11}  verdict")
    for rule, runs in es["runs"].items():
        steps = median([r["steps_fraction"] for r in runs])
        top = median([r["top_fraction"] for r in runs])
        share = sum(r["top_fraction"] <= 0.1 for r in runs) / len(runs)
        ok = steps <= 0.4 and top <= 0.1
        print(f"{rule:<8} {steps:>11.1%} {'top ' + format(top, '.1%'):>12} {share:>10.0%} "
              f" {'PASS' if ok else 'FAIL'}")
    print("\n(steps spent and picked rank: medians over the seeds; 'top 10% in': the share of "
          "seeds whose pick was in the top 10%)")


if __name__ == "__main__":
    main()
