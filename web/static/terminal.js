// The console page's Terminal tab: a login shell in the desktop through
// bureau-agent, over /api/v1/desktops/{id}/console/pty?token=… (binary
// keystrokes in, binary screen out, {"type":"resize"} and {"type":"exit"}
// as text). xterm.js and its fit addon are loaded as classic scripts
// (globals Terminal and FitAddon.FitAddon) from /static/xterm/.
//
// For tests: document.body.dataset.terminal is "open" while connected,
// "exited" after the shell ended, "failed" when it could not connect;
// window.bureauTerminal is the xterm.js Terminal.

export function setupTerminal({ desktopID, token, button, container, onShow }) {
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}` +
    `/api/v1/desktops/${encodeURIComponent(desktopID)}/console/pty?token=${encodeURIComponent(token)}`;
  let term = null;
  let fit = null;
  let ws = null;
  const enc = new TextEncoder();

  function sendSize() {
    if (ws && ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify({ type: 'resize', rows: term.rows, cols: term.cols }));
    }
  }

  function connect() {
    document.body.dataset.terminal = 'connecting';
    ws = new WebSocket(`${url}&rows=${term.rows}&cols=${term.cols}`);
    ws.binaryType = 'arraybuffer';
    const mine = ws;
    ws.addEventListener('open', () => {
      document.body.dataset.terminal = 'open';
      sendSize();
      term.focus();
    });
    ws.addEventListener('message', (ev) => {
      if (typeof ev.data !== 'string') {
        term.write(new Uint8Array(ev.data));
        return;
      }
      let m = {};
      try { m = JSON.parse(ev.data); } catch { /* not ours */ }
      if (m.type === 'exit') {
        document.body.dataset.terminal = 'exited';
        term.write(`\r\n\x1b[2m[process exited with code ${m.code}; press Enter for a new shell]\x1b[0m\r\n`);
      }
    });
    ws.addEventListener('close', (ev) => {
      if (mine !== ws) return;
      if (document.body.dataset.terminal !== 'exited') {
        document.body.dataset.terminal = 'failed';
        term.write(`\r\n\x1b[31m[disconnected${ev.reason ? ': ' + ev.reason : ''}; press Enter to reconnect]\x1b[0m\r\n`);
      }
      ws = null;
    });
  }

  function create() {
    term = new window.Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, monospace' });
    fit = new window.FitAddon.FitAddon();
    term.loadAddon(fit);
    term.open(container);
    fit.fit();
    window.bureauTerminal = term;
    term.onData((data) => {
      if (ws && ws.readyState === WebSocket.OPEN) {
        ws.send(enc.encode(data));
      } else if (data === '\r') {
        connect();
      }
    });
    term.onResize(sendSize);
    new ResizeObserver(() => { if (!container.hidden) fit.fit(); }).observe(container);
    connect();
  }

  let shown = false;
  function show(on) {
    shown = on;
    container.hidden = !on;
    button.setAttribute('aria-pressed', String(on));
    button.textContent = on ? 'Screen' : 'Terminal';
    onShow(on);
    if (!on) return;
    if (!term) create();
    else { fit.fit(); term.focus(); }
  }
  button.addEventListener('click', () => show(!shown));
  return { show, setEnabled(on) { button.hidden = !on; if (!on && shown) show(false); } };
}
