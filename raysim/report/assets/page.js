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
        s.paths = uPlot.paths.stepped({align: 1});
        s.points = {show: false};
      } else {
        s.points = {show: false};
      }
      series.push(s);
    });
    var xscale = {time: false};
    if (chart.x.log) { xscale.distr = 3; }
    if (chart.x.asinh) {
      xscale.distr = 4; xscale.asinh = 1;
      xscale.range = function (u, lo, hi) { return [0, hi]; };
    }
    if (cats) { xscale.range = function () { return [-0.5, cats.length - 0.5]; }; }
    var yscale = {};
    if (chart.y.range) { yscale.range = function () { return chart.y.range; }; }
    var xaxis = {label: chart.x.label, labelSize: 30};
    var yaxis = {label: chart.y.label, size: 70, labelSize: 30};
    if (axisValues(chart.x)) xaxis.values = axisValues(chart.x);
    if (axisValues(chart.y)) yaxis.values = axisValues(chart.y);
    if (cats) {
      xaxis.splits = function () { return cats.map(function (_, i) { return i; }); };
      var longest = Math.max.apply(null, cats.map(function (c) { return String(c).length; }));
      if (cats.length * (longest * 7 + 8) > width - 90) {  // labels would touch: tilt them
        xaxis.rotate = -35;
        xaxis.size = Math.min(160, 20 + longest * 5);
      }
    }
    var opts = {
      width: width, height: chart.height || 320, title: chart.title, series: series,
      scales: {x: xscale, y: yscale},
      axes: [xaxis, yaxis],
      cursor: {drag: {x: !cats, y: false}},
      legend: {live: true}
    };
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

  var data = JSON.parse(document.getElementById("raysim-charts").textContent);
  data.forEach(draw);
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);
  document.body.setAttribute("data-charts-drawn", String(data.length));
})();
