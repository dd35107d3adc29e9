// Shows a setting only when it applies: an element with data-applies-when="<select id>" and
// data-applies-value="<value> [<value> ...]" is hidden unless that select has one of those
// values (LoRA's rank only for LoRA, Q-priming's decay only for Q-priming, a protocol's teacher
// settings only for the didactic mode). Without JavaScript every setting shows.
(function () {
  function update() {
    document.querySelectorAll("[data-applies-when]").forEach(function (element) {
      const control = document.getElementById(element.dataset.appliesWhen);
      const values = element.dataset.appliesValue.split(" ");
      element.hidden = Boolean(control) && values.indexOf(control.value) === -1;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    update();
    document.addEventListener("change", update);
  });
})();
