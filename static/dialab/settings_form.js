// Shows a setting only when it applies: an element with data-applies-when="<select id>" and
// data-applies-value="<value>" is hidden unless that select has that value (LoRA's rank only
// for LoRA, Q-priming's decay only for Q-priming). Without JavaScript every setting shows.
(function () {
  function update() {
    document.querySelectorAll("[data-applies-when]").forEach(function (element) {
      const control = document.getElementById(element.dataset.appliesWhen);
      element.hidden = Boolean(control) && control.value !== element.dataset.appliesValue;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    update();
    document.addEventListener("change", update);
  });
})();
