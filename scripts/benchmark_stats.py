"""Statistics of the benchmark (scripts/benchmark.py): Kaplan-Meier estimates for times to a
target that some runs never reach (right-censored), and a paired bootstrap for ratios between
modes. Pure Python; `python3 scripts/benchmark_stats.py` runs its self-test."""
import math
import random

INF = float("inf")


def kaplan_meier(events):
    """events: [(time, reached)] where reached=False means censored at `time` (the run ended
    without reaching the target). Returns the survival curve as [(time, S(time))] at each event
    time, S = P(time-to-target > time). Ties: events before censorings at the same time."""
    data = sorted(events, key=lambda e: (e[0], not e[1]))
    at_risk = len(data)
    s = 1.0
    curve = []
    i = 0
    while i < len(data):
        t = data[i][0]
        reached = censored = 0
        while i < len(data) and data[i][0] == t:
            if data[i][1]:
                reached += 1
            else:
                censored += 1
            i += 1
        if reached:
            s *= 1.0 - reached / at_risk
            curve.append((t, s))
        at_risk -= reached + censored
    return curve


def km_median(events, convention="lower"):
    """The Kaplan-Meier median time-to-target; INF when the survival never drops to 0.5 (more
    than half the runs censored before reaching the target).

    lower:    the smallest time at which the survival is 0.5 or below;
    midpoint: where the survival sits exactly at 0.5 over [t_i, t_j) (t_j the next event), the
              midpoint (t_i + t_j) / 2, as the sample median of an even count; INF when it stays
              at 0.5 to the end (the runs left were censored). Otherwise it equals `lower`."""
    curve = kaplan_meier(events)
    for i, (t, s) in enumerate(curve):
        if s <= 0.5 + 1e-12:
            if convention == "midpoint" and abs(s - 0.5) <= 1e-12:
                return (t + curve[i + 1][0]) / 2 if i + 1 < len(curve) else INF
            return t
    return INF


def km_reached_share(events):
    """1 - S at the end: the estimated share of runs that reach the target within the budget."""
    curve = kaplan_meier(events)
    return 1.0 - curve[-1][1] if curve else 0.0


def rmst(events, horizon):
    """Restricted mean time-to-target up to `horizon`: the area under the KM survival curve on
    [0, horizon] (= E[min(T, horizon)]). Always defined, unlike the median."""
    area, last_t, last_s = 0.0, 0.0, 1.0
    for t, s in kaplan_meier(events):
        if t >= horizon:
            break
        area += last_s * (t - last_t)
        last_t, last_s = t, s
    return area + last_s * (horizon - last_t)


def ratio(a, b):
    """a / b for positive times, with INF handled: INF/x = INF, x/INF = 0, INF/INF = nan."""
    if a == INF and b == INF:
        return float("nan")
    if b == INF:
        return 0.0
    if a == INF:
        return INF
    if b == 0:
        return float("nan")
    return a / b


def percentile(values, q):
    """Linear-interpolated percentile (q in [0, 100]) of the non-nan values; INF sorts last."""
    xs = sorted(v for v in values if not (isinstance(v, float) and math.isnan(v)))
    if not xs:
        return float("nan")
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    if xs[lo] == INF or xs[hi] == INF:
        return xs[hi] if k > lo else xs[lo]
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def paired_bootstrap(seeds, statistic, resamples=2000, rng_seed=12345):
    """Percentile bootstrap over seeds (the pairing unit: every mode ran every seed). `statistic`
    maps a list of seeds (with repeats) to a number (INF allowed). Returns (point estimate,
    low 2.5%, high 97.5%, share of resamples where the statistic was undefined (nan))."""
    point = statistic(list(seeds))
    rng = random.Random(rng_seed)
    values = []
    undefined = 0
    for _ in range(resamples):
        sample = [rng.choice(seeds) for _ in seeds]
        v = statistic(sample)
        if isinstance(v, float) and math.isnan(v):
            undefined += 1
        values.append(v)
    return point, percentile(values, 2.5), percentile(values, 97.5), undefined / resamples


def mean_difference(pairs, resamples=2000, rng_seed=12345):
    """Paired differences (a - b per seed, pairs = {seed: (a, b)}): the mean difference with a
    percentile bootstrap 95% interval over seeds, as (mean, low, high)."""
    seeds = sorted(pairs)
    if not seeds:
        return None, None, None
    point, lo, hi, _ = paired_bootstrap(
        seeds, lambda ss: sum(pairs[x][0] - pairs[x][1] for x in ss) / len(ss), resamples, rng_seed)
    return point, lo, hi


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def std_error(xs):
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs))


def _self_test():
    # Kaplan-Meier against a hand computation: times 2, 3(censored), 4, 4, 6(censored).
    ev = [(2, True), (3, False), (4, True), (4, True), (6, False)]
    curve = kaplan_meier(ev)
    assert curve[0] == (2, 0.8), curve
    assert abs(curve[1][1] - 0.8 * (1 - 2 / 3)) < 1e-12, curve
    assert km_median(ev) == 4
    assert km_median([(5, False), (5, False), (3, True)]) == INF
    # An even count without censoring: the survival sits at 0.5 from 2 to 3; lower says 2, the
    # midpoint 2.5 (the sample median); a 0.5 that lasts to a censored end has no midpoint.
    ev = [(t, True) for t in (1, 2, 3, 4)]
    assert km_median(ev, "midpoint") == 2.5
    assert km_median([(1, True), (2, True), (5, False), (5, False)], "midpoint") == INF
    assert km_median([(1, True), (2, True), (5, False), (5, False)]) == 2
    assert km_median([(1, True), (2, True), (3, True)], "midpoint") == 2
    # Without censoring the KM median is the lower median and RMST the plain mean.
    ev = [(t, True) for t in (1, 2, 3, 4)]
    assert km_median(ev) == 2
    assert abs(rmst(ev, 10) - 2.5) < 1e-12
    assert abs(rmst(ev, 2) - (1 + 0.75)) < 1e-12
    assert km_reached_share([(1, True), (9, False)]) == 0.5
    assert ratio(4, 2) == 2 and ratio(INF, 2) == INF and ratio(2, INF) == 0
    assert math.isnan(ratio(INF, INF))
    assert percentile([1, 2, 3, INF], 100) == INF and percentile([1, 3], 50) == 2
    point, lo, hi, undefined = paired_bootstrap([0, 1, 2, 3], lambda s: float(sum(s)) / len(s))
    assert point == 1.5 and 0 <= lo <= point <= hi <= 3 and undefined == 0
    diff = mean_difference({0: (0.5, 0.4), 1: (0.7, 0.4), 2: (0.6, 0.6)})
    assert abs(diff[0] - 0.4 / 3) < 1e-12 and diff[1] <= diff[0] <= diff[2], diff
    assert mean_difference({}) == (None, None, None)
    print("benchmark_stats: self-test passed")


if __name__ == "__main__":
    _self_test()
