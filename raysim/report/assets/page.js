// raysim's report pages: draws the charts described in the page's JSON (uPlot, inlined above)
// and makes tables with class "sortable" sortable by a click on a column heading.
(function () {
  "use strict";
  var COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"];

  function fmt(v) {
    if (v == null || isNaN(v)) return "–";
    var a = Math.abs(v);
    if (a >= 1000) return v.toLocaleString("en-US", {maximumFractionDigits: 0});
    if (a >= 10) return v.toFixed(1);
    return String(+v.toPrecision(3));
  }

  function tick(v) {
    if (v == null || isNaN(v)) return "";
    return Number.isInteger(v) ? v.toLocaleString("en-US") : String(+v.toPrecision(3));
  }

  // Labels of a linear axis: as many decimals as the step between ticks has, the same for every
  // tick (0.2220, 0.2225, 0.2230), so that no two ticks read alike
  function linearTicks(u, splits, axisIdx, space, incr) {
    var d = 0;
    while (d < 15 && Math.abs(+incr.toFixed(d) - incr) > Math.abs(incr) * 1e-6) d++;
    return splits.map(function (v) {
      return v == null ? "" : (v + 0).toLocaleString("en-US", {minimumFractionDigits: d, maximumFractionDigits: d});
    });
  }

  function axisValues(spec) {
    if (spec.categories) {
      return function (u, splits) { return splits.map(function (i) { return spec.categories[i] || ""; }); };
    }
    if (spec.log || spec.asinh) {  // label the powers of ten (and 0) only
      return function (u, splits) {
        return splits.map(function (v) {
          return v === 0 || (v > 0 && Math.abs(Math.log10(v) % 1) < 1e-9) ? tick(v) : "";
        });
      };
    }
    return linearTicks;
  }

  // Axis layout: every tick label and axis title inside the chart's canvas. Sizes come from the
  // labels' measured widths; a title longer than its side of the plot is wrapped onto more lines.
  var FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif', LABEL_FONT = "bold " + FONT;
  var LINE = 15, TITLE_GAP = 6, TILT = 35;  // px between a title's lines, px around a title, degrees of tilted labels
  var ruler = document.createElement("canvas").getContext("2d");

  function textWidth(text, font) {
    ruler.font = font;
    return ruler.measureText(String(text)).width;
  }

  function wrap(text, room) {  // lines of at most `room` px, broken between words
    var lines = [];
    String(text || "").trim().split(/\s+/).forEach(function (word) {
      var last = lines.length - 1;
      if (last >= 0 && textWidth(lines[last] + " " + word, LABEL_FONT) <= room) lines[last] += " " + word;
      else if (word) lines.push(word);
    });
    return lines;
  }

  function widest(values) {
    return Math.max.apply(null, [0].concat((values || []).map(function (v) {
      return v == null ? 0 : textWidth(v, FONT);
    })));
  }

  function fitAxes(opts) {
    var sin = Math.sin(TILT * Math.PI / 180), cos = Math.cos(TILT * Math.PI / 180);
    var room = [opts.width - 120, opts.height - 90];  // the plot's width and height, about (before the axes)
    var titles = opts.axes.map(function (axis, i) {
      var lines = wrap(axis.label, Math.max(room[i], 80));
      axis.font = FONT;
      axis.labelFont = LABEL_FONT;
      axis.label = function () { return ""; };  // uPlot keeps the room (labelSize); drawTitles draws the lines
      axis.labelSize = lines.length ? lines.length * LINE + TITLE_GAP : 0;
      return lines;
    });
    opts.axes[1].size = function (u, values) {
      var axis = u.axes[1];
      return Math.ceil(axis.ticks.size + axis.gap + widest(values) + 4);
    };
    opts.axes[0].size = function (u, values) {
      var axis = u.axes[0], rows = Math.max.apply(null, [1].concat((values || []).map(function (v) {
        return String(v).split("\n").length;
      })));
      var tall = axis._rotate ? widest(values) * sin + 12 * cos : 12 * axis.lineGap * rows;
      return Math.ceil(axis.ticks.size + axis.gap + tall + 4);
    };
    // room at the right for the last x label (centred on its tick, or tilted to the right of it)
    opts.padding = [null, function (u) {
      var values = (u.axes[0]._values || []).filter(function (v) { return v != null && v !== ""; });
      var last = values.length ? widest([values[values.length - 1]]) : 0;
      return Math.ceil(Math.max(16, u.axes[0]._rotate ? last * cos + 6 * sin : last / 2) + 4);
    }, null, null];
    opts.hooks = opts.hooks || {};
    opts.hooks.draw = (opts.hooks.draw || []).concat([function (u) { drawTitles(u, titles); }]);
  }

  function drawTitles(u, titles) {  // each axis's title, a line at a time, in the room uPlot keeps for it
    var ctx = u.ctx, ratio = uPlot.pxRatio, box = u.bbox;
    ctx.save();
    ctx.font = "bold " + 12 * ratio + FONT.slice(FONT.indexOf("px"));
    ctx.fillStyle = "#000";
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    u.axes.forEach(function (axis, i) {
      titles[i].forEach(function (line, k) {
        if (axis.side === 3) {  // the y axis, at the left, read from bottom to top
          ctx.save();
          ctx.translate((axis._lpos - axis.labelSize + TITLE_GAP / 2 + k * LINE) * ratio, box.top + box.height / 2);
          ctx.rotate(-Math.PI / 2);
          ctx.fillText(line, 0, 0);
          ctx.restore();
        } else {
          ctx.fillText(line, box.left + box.width / 2, (axis._lpos + TITLE_GAP / 2 + k * LINE) * ratio);
        }
      });
    });
    ctx.restore();
  }

  // The legend names the lines; their values (and the x value) show while the cursor is over the chart.
  function quietLegend(opts) {
    opts.series.forEach(function (s) {
      var value = s.value;
      s.value = function (u, v, si, idx) { return idx == null ? "" : value(u, v, si, idx); };
    });
    var idle = function (u) { u.root.classList.toggle("idle", u.cursor.idx == null); };
    opts.hooks = opts.hooks || {};
    opts.hooks.ready = (opts.hooks.ready || []).concat([idle]);
    opts.hooks.setCursor = (opts.hooks.setCursor || []).concat([idle]);
  }

  function draw(chart) {
    var el = document.getElementById(chart.id);
    var width = Math.max(300, Math.min(el.parentNode.clientWidth || 900, 1100));
    var cats = chart.x.categories;
    var series = [{label: chart.x.label, value: cats ? function (u, v) { return v == null ? "–" : cats[v]; }
                                                     : function (u, v) { return fmt(v); }}];
    chart.series.forEach(function (name, i) {
      var colour = COLOURS[i % COLOURS.length];
      var faint = chart.bold != null && chart.bold !== i;
      var text = chart.text && chart.text[i];  // the table's text of each value, where the chart has it
      var s = {label: name, stroke: faint ? colour + "b0" : colour, width: faint ? 1.1 : (chart.bold === i ? 2.6 : 1.5),
               spanGaps: false,
               value: function (u, v, si, di) { return text && di != null && v != null ? text[di] : fmt(v); }};
      if (chart.kind === "bars") {
        s.fill = colour + "aa";
        s.paths = uPlot.paths.bars({size: [0.7, 80]});
        s.points = {show: false};
      } else if (chart.kind === "points") {
        s.paths = function () { return null; };
        s.points = {show: true, size: 8, fill: colour};
      } else if (chart.kind === "step") {
        s.paths = uPlot.paths.stepped({align: 1});  // uPlot marks the points where they are few (a small run's CDF)
      } else {
        s.points = {show: false};
      }
      series.push(s);
    });
    var xscale = {time: false};
    if (chart.x.log) { xscale.distr = 3; }
    if (chart.x.asinh) {
      xscale.distr = 4; xscale.asinh = 1;
      xscale.range = function (u, lo, hi) { return [0, hi > 0 ? hi : 1]; };  // hi 0: no job waited
    }
    if (cats) { xscale.range = function () { return [-0.5, cats.length - 0.5]; }; }
    var yscale = {};
    if (chart.y.range) { yscale.range = function () { return chart.y.range; }; }
    var xaxis = {label: chart.x.label};
    var yaxis = {label: chart.y.label};
    if (axisValues(chart.x)) xaxis.values = axisValues(chart.x);
    if (axisValues(chart.y)) yaxis.values = axisValues(chart.y);
    if (cats) {
      xaxis.splits = function () { return cats.map(function (_, i) { return i; }); };
      if (cats.length * (widest(cats) + 8) > width - 90) xaxis.rotate = -TILT;  // labels would touch: tilt them
    }
    var opts = {
      width: width, height: chart.height || 320, title: chart.title, series: series,
      scales: {x: xscale, y: yscale},
      axes: [xaxis, yaxis],
      cursor: {drag: {x: !cats, y: false}},
      legend: {live: true}
    };
    fitAxes(opts);
    quietLegend(opts);
    el.uplot = new uPlot(opts, chart.data, el);  // what it drew, for a test or the console to read back
  }

  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.title = "sort by this column";
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var down = th.getAttribute("data-sorted") !== "up";
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
          var nx = parseFloat(x), ny = parseFloat(y);
          var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
          return down ? c : -c;
        });
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("data-sorted"); });
        th.setAttribute("data-sorted", down ? "up" : "down");
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  // A table wider than the page scrolls sideways (its first column stays); a line above it says so.
  function scrollHint(box) {
    var hint = document.createElement("p");
    hint.className = "caption scroll-hint";
    hint.textContent = "The table is wider than the page: scroll it sideways for the other columns →";
    box.parentNode.insertBefore(hint, box);
    var update = function () {
      var wide = box.scrollWidth > box.clientWidth + 1;
      hint.hidden = !wide;
      box.classList.toggle("wide", wide);
    };
    update();
    window.addEventListener("resize", update);
  }

  var data = JSON.parse(document.getElementById("raysim-charts").textContent);
  data.forEach(draw);
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);
  Array.prototype.forEach.call(document.querySelectorAll("div.scroll"), scrollHint);
  document.body.setAttribute("data-charts-drawn", String(data.length));
})();
