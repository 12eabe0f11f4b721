// svgplot: a minimal SVG line chart (log-x, linear-y) for ladder curves, forecasts with bands, and
// observed runs. Not a plotting library: lines, a shaded band, axes with ticks, a legend.
#ifndef SEXTANT_SVGPLOT_H
#define SEXTANT_SVGPLOT_H
#include <stdbool.h>
#include <stddef.h>
#include "core/status.h"

typedef struct {
    const char *label;
    const double *x, *y;     // (n) x > 0
    const double *lo, *hi;   // optional band (n), NULL for none
    size_t n;
    const char *color;       // CSS colour
    bool dashed, markers;
} svg_series;

// Writes the chart to path. x_label/y_label name the axes.
sx_status svgplot_write(const char *path, const char *title, const char *x_label, const char *y_label,
                        const svg_series *series, size_t n_series);

#endif
