// The chat: sends the person's words over the WebSocket and shows Nova's reply as it streams.
(function () {
  "use strict";
  const chat = document.querySelector(".chat");
  if (!chat) return;
  const sessionId = chat.dataset.session;
  const list = document.getElementById("messages");
  const form = document.getElementById("composer");
  const input = document.getElementById("text");
  let current = null;
  let socket = null;

  function add(role, text) {
    const li = document.createElement("li");
    li.className = "msg " + role;
    li.textContent = text; // textContent: message text is never parsed as HTML
    list.appendChild(li);
    list.scrollTop = list.scrollHeight;
    return li;
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(proto + "://" + location.host + "/ws/sessions/" + sessionId + "/");
    socket.onmessage = function (ev) {
      const msg = JSON.parse(ev.data);
      if (msg.type === "start") { current = add("assistant", ""); }
      else if (msg.type === "token" && current) { current.textContent += msg.text; list.scrollTop = list.scrollHeight; }
      else if (msg.type === "done") {
        if (!current) current = add("assistant", "");
        current.textContent = msg.reply;
        if (msg.status === "rueckfrage") current.classList.add("question");
        current.dataset.turn = msg.turn_id;
        current = null;
      } else if (msg.type === "error") { add("assistant error", msg.text); }
    };
    socket.onclose = function () { setTimeout(connect, 1500); };
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    const text = input.value;
    if (!text.trim() || !socket || socket.readyState !== WebSocket.OPEN) return;
    add("user", text);
    socket.send(JSON.stringify({ text: text }));
    input.value = "";
  });
  input.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); form.requestSubmit(); }
  });
  connect();
})();
