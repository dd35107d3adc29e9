// Draws (and redraws in place) every Plotly chart whose figure lives in a JSON <script> tag.
// A chart element names its figure with data-figure="<script id>"; htmx swaps new figure data
// in on each poll and Plotly.react updates the chart without re-creating it.
(function () {
  const config = { responsive: true, displaylogo: false };

  function drawCharts() {
    if (!window.Plotly) return;
    document.querySelectorAll("[data-figure]").forEach(function (element) {
      const source = document.getElementById(element.dataset.figure);
      if (!source) return;
      const figure = JSON.parse(source.textContent);
      window.Plotly.react(element, figure.data, figure.layout, config);
      element.dataset.drawn = "true";
    });
  }

  document.addEventListener("DOMContentLoaded", drawCharts);
  document.addEventListener("htmx:afterSettle", drawCharts);
})();
