// A form that posts while the server cannot be reached (docs/design.md "What the person sees"): before a
// POST form is sent, the page asks /healthz (5 s at most). When that fails, nothing is sent, the page
// and everything typed stay, and a line in the form (`p.send-failed`, role alert) says so; pressing the
// button again tries again. When it answers, the form is submitted as the person asked (with the
// button pressed), and the page's own handlers act on it as before. Without this script (no
// JavaScript) a form posts as it always did.
(() => {
  const SAID =
    'Nothing was sent: the server cannot be reached. What you typed is kept here; send it again when the connection is back.';
  const reachable = async () => {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), 5000);
    try {
      const r = await fetch('/healthz', { cache: 'no-store', signal: stop.signal });
      return r.ok;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  };
  document.addEventListener(
    'submit',
    async (ev) => {
      const form = ev.target;
      if (!(form instanceof HTMLFormElement) || form.method !== 'post') return;
      if (form.dataset.checked === '1') {
        delete form.dataset.checked;
        return;
      }
      ev.preventDefault();
      ev.stopImmediatePropagation();
      const submitter = ev.submitter;
      const ok = await reachable();
      let said = form.querySelector(':scope > .send-failed');
      if (!ok) {
        if (!said) {
          said = document.createElement('p');
          said.className = 'send-failed';
          said.setAttribute('role', 'alert');
          form.append(said);
        }
        said.textContent = SAID;
        return;
      }
      said?.remove();
      form.dataset.checked = '1';
      form.requestSubmit(submitter && submitter.form === form ? submitter : undefined);
    },
    true,
  );
})();
