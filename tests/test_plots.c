// Charts (issue 23, item 6): the y axis gets 4 to 8 round ticks over any range; points flagged outside the
// band are ringed and counted in the legend; titles are XML-escaped and wrapped; the forecast chart's title
// names the ladder, the run and both schedules. The task chart (issue 27) draws the hero's measured
// accuracies where they are: read back through the axes' tick labels, each marker gives its point's FLOPs and
// accuracy.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "report/plots.h"
#include "report/svgplot.h"
#include "support/testlib.h"

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (size_t at = 0; strstr(hay + at, needle); n++) at = (size_t)(strstr(hay + at, needle) - hay) + 1;
    return n;
}

// The title's text as a reader sees it: the <text class="title"> element's content, tags dropped, lines
// joined by a space. Overwrites a static buffer.
static const char *title_of(const char *svg) {
    static char out[1024];
    const char *p = strstr(svg, "class=\"title\"");
    size_t n = 0;
    bool in_tag = true;
    for (; p && *p && n < sizeof out - 2 && strncmp(p, "</text>", 7); p++) {
        if (*p == '<') {
            in_tag = true;
            if (!strncmp(p, "<tspan x", 8)) out[n++] = ' ';
        } else if (*p == '>') in_tag = false;
        else if (!in_tag) out[n++] = *p;
    }
    out[n] = 0;
    return out;
}

// Runs print(f, arg) into memory and returns the text (malloc'd).
static char *capture(bool (*print)(FILE *, void *), void *arg) {
    static char *buf;   // static: open_memstream keeps their addresses until fclose
    static size_t len;
    buf = NULL;
    FILE *f = open_memstream(&buf, &len);
    CHECK(print(f, arg));
    fclose(f);
    return buf;
}

static void test_ticks(void) {
    double t[16];
    // The case: a loss axis from ~0.7 to ~3.7 had 30 labels; now 1.0, 1.5, ..., 3.5.
    size_t n = svgplot_ticks(0.66, 3.74, t, 16);
    CHECK(n == 6);
    CHECK_CLOSE(t[0], 1.0, 0, 1e-12);
    CHECK_CLOSE(t[1] - t[0], 0.5, 0, 1e-12);
    n = svgplot_ticks(3.98, 4.61, t, 16);   // a narrow ladder: 4.0 .. 4.6 by 0.1
    CHECK(n == 7);
    CHECK_CLOSE(t[0], 4.0, 0, 1e-12);
    rng_state s;
    rng_seed(&s, 7);
    for (int k = 0; k < 2000; k++) {
        double lo = (rng_uniform(&s) - 0.5) * pow(10, 6 * rng_uniform(&s) - 3);
        double hi = lo + pow(10, 8 * rng_uniform(&s) - 4);
        n = svgplot_ticks(lo, hi, t, 16);
        if (!CHECK(n >= 4 && n <= 8)) { fprintf(stderr, "  [%g, %g]: %zu ticks\n", lo, hi, n); break; }
        double step = t[1] - t[0], m = step / pow(10, floor(log10(step) + 1e-9));
        CHECK(fabs(m - 1) < 1e-6 || fabs(m - 2) < 1e-6 || fabs(m - 2.5) < 1e-6 || fabs(m - 5) < 1e-6);
        CHECK(t[0] >= lo - 1e-9 * step && t[n - 1] <= hi + 1e-9 * step);
    }
    CHECK(svgplot_ticks(1, 1, t, 16) == 0);
}

static bool print_flagged(FILE *f, void *arg) {
    (void)arg;
    static const double x[] = {1e9, 2e9, 4e9, 8e9}, y[] = {3.0, 2.8, 2.5, 2.45}, lo[] = {2.9, 2.7, 2.6, 2.3},
                        hi[] = {3.1, 2.9, 2.7, 2.6};
    static const bool out[] = {false, false, true, false};
    svg_series s[] = {{.label = "forecast", .x = x, .y = y, .lo = lo, .hi = hi, .n = 4, .color = "red", .dashed = true},
                      {.label = "observed <&>", .x = x, .y = y, .flagged = out, .n = 4, .color = "black", .markers = true}};
    return svgplot_print(f, "Ladder \"a<b\" & hero: a title long enough that it has to be wrapped onto a second line "
                            "so that it stays inside the picture", "FLOPs", "loss", s, 2);
}

static void test_svg(void) {
    char *svg = capture(print_flagged, NULL);
    CHECK(count(svg, "class=\"outside\"") == 1);
    CHECK(strstr(svg, "outside the band (1)") != NULL);
    CHECK(strstr(svg, "observed &lt;&amp;&gt;") != NULL);
    CHECK(strstr(svg, "Ladder &quot;a&lt;b&quot; &amp; hero") != NULL);
    CHECK(count(svg, "<tspan") == 2);   // wrapped, nothing lost
    CHECK(strcmp(title_of(svg), "Ladder &quot;a&lt;b&quot; &amp; hero: a title long enough that it has to be wrapped onto a "
                                "second line so that it stays inside the picture") == 0);
    size_t ticks = count(svg, "class=\"ytick\"");
    CHECK(ticks >= 4 && ticks <= 8);
    free(svg);
}

static bool print_forecast(FILE *f, void *arg) {
    json_t **docs = arg;
    return plots_forecast(f, docs[0], docs[1], docs[2]) == SX_OK;
}

static void test_forecast_chart(void) {
    json_t *fc = json_pack("{s:{s:s, s:s, s:f}, s:{s:s, s:s}, s:[{s:f, s:f, s:f, s:f}, {s:f, s:f, s:f, s:f}]}",
                           "hero", "model", "d2-hd16-w128", "schedule", "cosine:min=0.1", "flops", 3e13,
                           "method", "ladder", "demo-wsd", "rung_schedule", "wsd:decay=0.2",
                           "points", "frac", 0.5, "loss", 4.4, "lo", 4.3, "hi", 4.5, "frac", 1.0, "loss", 4.1, "lo", 4.0, "hi", 4.2);
    json_t *report = json_pack("{s:s, s:[{s:f, s:f, s:b}, {s:f, s:f, s:b}]}", "run", "runs/demo/hero", "rows",
                               "frac", 0.5, "observed", 4.45, "inside", 1, "frac", 1.0, "observed", 4.3, "inside", 0);
    json_t *docs[3] = {NULL, fc, report};
    char *svg = capture(print_forecast, docs);
    CHECK(strstr(title_of(svg), "run runs/demo/hero (d2-hd16-w128, cosine:min=0.1) from ladder demo-wsd (wsd:decay=0.2)") != NULL);
    CHECK(count(svg, "class=\"outside\"") == 1);
    CHECK(strstr(svg, "outside the band (1)") != NULL);
    free(svg);
    docs[2] = NULL;   // the forecast alone: titled as such, no observed points
    svg = capture(print_forecast, docs);
    CHECK(strstr(title_of(svg), "Forecast: hero d2-hd16-w128 on cosine:min=0.1, from ladder demo-wsd (wsd:decay=0.2)") != NULL);
    CHECK(count(svg, "class=\"outside\"") == 0);
    free(svg);
    json_decref(fc);
    json_decref(report);
}

static bool print_task(FILE *f, void *arg) {
    json_t **docs = arg;
    return plots_task(f, docs[0], docs[1], "choice") == SX_OK;
}

// The value of a tick label's position: from two labelled ticks of class cls ("xtick": "1eN" at log10 = N;
// "ytick": plain numbers), the linear map pixel -> value (log10 for x).
static void axis_map(const char *svg, const char *cls, double *scale, double *offset) {
    double pix[2], val[2];
    const char *p = svg;
    char key[32];
    snprintf(key, sizeof key, "class=\"%s\" ", cls);
    for (int k = 0; k < 2; k++) {
        p = strstr(p, key);
        CHECK(p != NULL);
        if (!p) return;
        double other;
        if (cls[0] == 'x') CHECK(sscanf(p + strlen(key), "x=\"%lf\" y=\"%lf\" text-anchor=\"middle\">1e%lf", &pix[k], &other, &val[k]) == 3);
        else CHECK(sscanf(p + strlen(key), "x=\"%lf\" y=\"%lf\" text-anchor=\"end\">%lf", &other, &pix[k], &val[k]) == 3);
        if (cls[0] == 'y') pix[k] -= 4;   // the label sits 4 px below its line
        p++;
    }
    *scale = (val[1] - val[0]) / (pix[1] - pix[0]);
    *offset = val[0] - *scale * pix[0];
}

static void test_task_chart(void) {
    // 5e11 .. 1e13 FLOPs: two labelled decades on the x axis
    json_t *fc = json_pack("{s:{s:s, s:f}, s:{s:{s:s, s:s, s:f, s:[{s:f, s:f, s:f, s:f}, {s:f, s:f, s:f, s:f}, {s:f, s:f, s:f, s:f}]}}}",
                           "hero", "model", "d2-hd16-w128", "flops", 1e13, "tasks", "choice", "status", "informative",
                           "form", "exp", "items", 1000.0, "points", "frac", 0.05, "acc", 0.34, "lo", 0.31, "hi", 0.37,
                           "frac", 0.5, "acc", 0.374, "lo", 0.34, "hi", 0.41, "frac", 1.0, "acc", 0.43, "lo", 0.38, "hi", 0.486);
    json_t *report = json_pack("{s:{s:{s:[{s:f, s:f, s:b}, {s:f, s:f, s:b}, {s:f, s:f, s:b}]}}}", "tasks", "choice", "rows",
                               "frac", 0.05, "observed", 0.354, "inside", 1, "frac", 0.5, "observed", 0.43, "inside", 0,
                               "frac", 1.0, "observed", 0.41, "inside", 1);
    json_t *docs[2] = {fc, report};
    char *svg = capture(print_task, docs);
    CHECK(strstr(title_of(svg), "Task choice: hero d2-hd16-w128 measured vs its chained forecast") != NULL);
    CHECK(strstr(svg, "hero forecast (accuracy law exp, 95% band)") && strstr(svg, "choice accuracy (%, 1000 items)"));
    CHECK(count(svg, "class=\"outside\"") == 1 && strstr(svg, "outside the band (1)"));
    double xs, xo, ys, yo, cx, cy;
    axis_map(svg, "xtick", &xs, &xo);
    axis_map(svg, "ytick", &ys, &yo);
    const double frac[3] = {0.05, 0.5, 1.0}, acc[3] = {35.4, 43.0, 41.0};
    const char *p = svg;
    for (int k = 0; k < 3; k++) {   // the measured markers, in order
        p = strstr(p, "r=\"2.5\" fill=\"#000\"");
        CHECK(p != NULL);
        if (!p) break;
        const char *c = p;
        while (c > svg && strncmp(c, "<circle", 7)) c--;
        CHECK(sscanf(c, "<circle cx=\"%lf\" cy=\"%lf\"", &cx, &cy) == 2);
        CHECK_CLOSE(pow(10, xs * cx + xo), 1e13 * frac[k], 0.01, 0);
        CHECK_CLOSE(ys * cy + yo, acc[k], 0, 0.05);
        p++;
    }
    CHECK(!strstr(p, "r=\"2.5\" fill=\"#000\""));   // and no others
    free(svg);
    docs[1] = NULL;   // the forecast alone: no markers, no ring
    svg = capture(print_task, docs);
    CHECK(strstr(title_of(svg), "Task choice: hero d2-hd16-w128 chained forecast") && !strstr(svg, "fill=\"#000\""));
    free(svg);
    FILE *null = fopen("/dev/null", "w");
    CHECK(plots_task(null, fc, NULL, "cloze") == SX_ERR_ARG && strstr(sx_last_error(), "no task cloze"));
    fclose(null);
    json_decref(fc);
    json_decref(report);
}

int main(void) {
    TEST_RUN(test_ticks);
    TEST_RUN(test_svg);
    TEST_RUN(test_forecast_chart);
    TEST_RUN(test_task_chart);
    return testlib_finish("plots");
}
