// Bounded Levenberg-Marquardt for calibration (docs/calibration.md, "The fit"): log residuals of
// the iteration times, elasticities by central differences through estimate().
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "calibrate_fit.hpp"

namespace poseidon::calibration {

namespace {

// Solves the symmetric positive definite system A x = b (Cholesky); false if A is not.
bool solve_spd(std::vector<std::vector<double>> A, std::vector<double>& b) {
    const std::size_t n = b.size();
    for (std::size_t j = 0; j < n; ++j) {
        double d = A[j][j];
        for (std::size_t k = 0; k < j; ++k) d -= A[j][k] * A[j][k];
        if (!(d > 0)) return false;
        A[j][j] = std::sqrt(d);
        for (std::size_t i = j + 1; i < n; ++i) {
            double s = A[i][j];
            for (std::size_t k = 0; k < j; ++k) s -= A[i][k] * A[j][k];
            A[i][j] = s / A[j][j];
        }
    }
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < i; ++k) b[i] -= A[i][k] * b[k];
        b[i] /= A[i][i];
    }
    for (std::size_t i = n; i-- > 0;) {
        for (std::size_t k = i + 1; k < n; ++k) b[i] -= A[k][i] * b[k];
        b[i] /= A[i][i];
    }
    return true;
}

}  // namespace

std::vector<double> Work::residuals() const {
    std::vector<double> r(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) r[i] = ln_time(i) - std::log(runs[i].iteration_time_s);
    return r;
}

// d ln(time_i) / d ln(value), central differences; zero for runs that do not use the device.
std::vector<double> Work::elasticity(const Candidate& c) {
    std::vector<double> col(runs.size(), 0.0);
    const double v = get(c);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        if (!run_uses(i, c)) continue;
        set(c, v * std::exp(fd_step));
        const double up = ln_time(i);
        set(c, v * std::exp(-fd_step));
        col[i] = (up - ln_time(i)) / (2 * fd_step);
        set(c, v);
    }
    return col;
}

double round6(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    return std::strtod(buf, nullptr);
}

double round_report(double x) { return std::abs(x) < 1e-9 ? 0.0 : round6(x); }

double sum_sq(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x * x;
    return s;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// Minimises the squared log residuals plus the prior's term over x = ln(values), each within
// [ln_lo, ln_hi]. A parameter on a bound whose gradient points outwards is held there for the step
// (active set). The prior is k more residuals sqrt(prior_weight(p)) (x_p - x0_p), linear in x.
LmResult levenberg_marquardt(Work& w, const std::vector<Candidate>& params, const std::vector<double>& preset) {
    const std::size_t k = params.size();
    std::vector<double> x(k), x0(k), ln_lo(k), ln_hi(k);
    for (std::size_t p = 0; p < k; ++p) {
        ln_lo[p] = std::log(params[p].min());
        ln_hi[p] = std::log(params[p].max());
        x[p] = std::clamp(std::log(w.get(params[p])), ln_lo[p], ln_hi[p]);
        x0[p] = std::log(preset.at(p));
    }
    std::vector<double> pw(k);
    for (std::size_t p = 0; p < k; ++p) pw[p] = prior_weight(params[p]);
    auto prior = [&](const std::vector<double>& xs) {
        double c = 0;
        for (std::size_t p = 0; p < k; ++p) c += pw[p] * (xs[p] - x0[p]) * (xs[p] - x0[p]);
        return c;
    };
    auto apply = [&](const std::vector<double>& xs) {
        for (std::size_t p = 0; p < k; ++p) w.set(params[p], std::exp(xs[p]));
    };
    apply(x);
    std::vector<double> r = w.residuals();
    double cost = sum_sq(r) + prior(x);
    double lambda = 1e-3;
    LmResult out;
    while (out.iterations < max_iterations && !out.converged) {
        ++out.iterations;
        std::vector<std::vector<double>> J(k);
        for (std::size_t p = 0; p < k; ++p) J[p] = w.elasticity(params[p]);
        std::vector<double> g(k);
        for (std::size_t p = 0; p < k; ++p) g[p] = dot(J[p], r) + pw[p] * (x[p] - x0[p]);
        std::vector<std::size_t> free;
        for (std::size_t p = 0; p < k; ++p) {
            const bool held = (x[p] <= ln_lo[p] && g[p] > 0) || (x[p] >= ln_hi[p] && g[p] < 0);
            if (!held) free.push_back(p);
        }
        if (free.empty()) {
            out.converged = true;
            break;
        }
        bool accepted = false;
        while (!accepted && lambda < 1e12) {
            const std::size_t n = free.size();
            std::vector<std::vector<double>> A(n, std::vector<double>(n));
            std::vector<double> b(n);
            for (std::size_t a = 0; a < n; ++a) {
                for (std::size_t c = 0; c < n; ++c) A[a][c] = dot(J[free[a]], J[free[c]]);
                A[a][a] += pw[free[a]];
                A[a][a] += lambda * A[a][a] + 1e-12;
                b[a] = -g[free[a]];
            }
            if (!solve_spd(A, b)) {
                lambda *= 4;
                continue;
            }
            std::vector<double> xn = x;
            double step = 0;
            for (std::size_t a = 0; a < n; ++a) {
                xn[free[a]] = std::clamp(x[free[a]] + b[a], ln_lo[free[a]], ln_hi[free[a]]);
                step = std::max(step, std::abs(xn[free[a]] - x[free[a]]));
            }
            apply(xn);
            std::vector<double> rn = w.residuals();
            const double cn = sum_sq(rn) + prior(xn);
            if (cn <= cost) {
                accepted = true;
                const double gain = cost - cn;
                x = xn;
                r = rn;
                cost = cn;
                lambda = std::max(lambda / 3, 1e-9);
                if (step < 1e-10 || gain <= 1e-15 * cost || cost < 1e-28) out.converged = true;
            } else {
                apply(x);
                lambda *= 4;
            }
        }
        // No step lowers the cost: x is a (projected) minimum to the Jacobian's accuracy.
        if (!accepted) out.converged = true;
    }
    apply(x);
    return out;
}

}  // namespace poseidon::calibration
