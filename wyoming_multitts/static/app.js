// The web page of wyoming-multitts: plain JavaScript, no build step. Every URL is relative, so
// the page works under Home Assistant's ingress prefix. Requests that change anything carry
// the page's token (web.py checks it with the request's Origin).
"use strict";

const TOKEN = document.querySelector('meta[name="multitts-token"]').content;
const POLL_MS = 1000; // how often the voices' and models' states are asked for
const MAX_RECORD_SECONDS = 20; // own_voices.MAX_RECORDING_SECONDS
const $ = (id) => document.getElementById(id);

let state = { voices: [], models: {} };
let speaking = null; // the AbortController of the speech playing now

// what the last try of a voice did (the browser tests read it)
window.lastSpeech = null;

function say(text, isError) {
  const box = $("message");
  box.textContent = text || "";
  box.className = isError ? "error" : "";
}

async function post(url, body) {
  const headers = { "X-MultiTTS-Token": TOKEN };
  if (!(body instanceof FormData)) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: body instanceof FormData ? body : JSON.stringify(body || {}),
  });
  return response;
}

async function postJson(url, body) {
  const response = await post(url, body);
  const reply = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(reply.error || `HTTP ${response.status}`);
  return reply;
}

// ---- state

function megabytes(bytes) {
  return (bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0) + " MB";
}

function seconds(s) {
  if (s === null || s === undefined || !isFinite(s)) return "…";
  return s < 90 ? `${Math.round(s)} s` : `${Math.round(s / 60)} min`;
}

function stateBadge(model) {
  const span = document.createElement("span");
  span.className = "state state-" + model.state.replace(/ /g, "-");
  span.textContent =
    model.state + (model.state === "loaded" && model.memory ? `, ${megabytes(model.memory)}` : "");
  return span;
}

function cell(row, content) {
  const td = row.insertCell();
  if (content instanceof Node) td.appendChild(content);
  else td.textContent = content === undefined ? "" : content;
  return td;
}

function button(text, onClick, cls) {
  const b = document.createElement("button");
  b.textContent = text;
  if (cls) b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}

function renderVoices() {
  const body = $("voices").tBodies[0];
  body.replaceChildren();
  for (const voice of state.voices) {
    const row = body.insertRow();
    row.dataset.voice = voice.name;
    cell(row, voice.description).title = voice.name;
    cell(row, voice.engine);
    cell(row, voice.languages.join(", "));
    cell(row, voice.speakers.join(", "));
    cell(row, stateBadge(state.models[voice.model]));
    cell(row, button("Try", () => tryVoice(voice.name), "try"));
  }
  const select = $("try-voice");
  const chosen = select.value;
  select.replaceChildren(
    ...state.voices.map((v) => new Option(`${v.description} (${v.name})`, v.name))
  );
  if (state.voices.some((v) => v.name === chosen)) select.value = chosen;
  renderSpeakers();
}

function renderSpeakers() {
  const voice = state.voices.find((v) => v.name === $("try-voice").value);
  const select = $("try-speaker");
  const chosen = select.value;
  select.replaceChildren(...(voice ? voice.speakers : []).map((s) => new Option(s, s)));
  if (voice && voice.speakers.includes(chosen)) select.value = chosen;
  select.disabled = !voice || voice.speakers.length < 2;
}

function renderModels() {
  const body = $("models").tBodies[0];
  body.replaceChildren();
  for (const [name, model] of Object.entries(state.models)) {
    const row = body.insertRow();
    row.dataset.model = name;
    cell(row, model.description || name).title = name;
    cell(row, model.engine);
    cell(row, stateBadge(model));
    const progress = cell(row, "");
    if (model.download) {
      const d = model.download;
      const bar = document.createElement("progress");
      bar.max = d.total || 1;
      if (d.total) bar.value = d.done;
      progress.appendChild(bar);
      const text = d.total
        ? ` ${megabytes(d.done)} of ${megabytes(d.total)}, ${megabytes(d.rate)}/s, ` +
          `${seconds(d.seconds_left)} left`
        : " sizing…";
      progress.appendChild(document.createTextNode(text));
    } else if (model.error) {
      progress.textContent = model.error;
      progress.className = "error";
    }
    const actions = cell(row, "");
    if (!model.downloadable) continue; // local files only: the user's, nothing to fetch
    if (model.state === "not downloaded")
      actions.appendChild(button("Download now", () => modelAction(name, "download"), "download"));
    if (model.state === "downloading")
      actions.appendChild(button("Cancel", () => modelAction(name, "cancel"), "cancel"));
    if (model.state === "on disk")
      actions.appendChild(button("Delete files", () => deleteFiles(name), "delete-files"));
  }
  const select = $("own-model");
  const chosen = select.value;
  const takers = Object.entries(state.models).filter(([, m]) => m.takes_recording);
  select.replaceChildren(...takers.map(([n, m]) => new Option(m.description || n, n)));
  if (takers.some(([n]) => n === chosen)) select.value = chosen;
}

function renderOwnVoices() {
  const body = $("own-voices").tBodies[0];
  body.replaceChildren();
  for (const voice of state.voices.filter((v) => v.own)) {
    const row = body.insertRow();
    row.dataset.voice = voice.name;
    cell(row, voice.description).title = voice.name;
    cell(row, state.models[voice.model].description || voice.model);
    cell(row, voice.languages.join(", "));
    const ready = cell(row, "");
    const p = voice.preparing;
    if (p && p.state === "making") {
      ready.textContent = `making its speaker profile… ${Math.round(p.seconds)} s`;
    } else if (p && p.state === "failed") {
      ready.textContent = p.error;
      ready.className = "error";
    } else {
      ready.textContent = "ready";
    }
    ready.classList.add("preparing");
    const actions = cell(row, "");
    actions.appendChild(button("Listen", () => tryVoice(voice.name), "listen"));
    actions.appendChild(button("Rename", () => renameVoice(voice.name), "rename"));
    actions.appendChild(button("Delete", () => deleteVoice(voice.name), "delete"));
  }
}

async function refresh() {
  try {
    const response = await fetch("api/state", { cache: "no-store" });
    const next = await response.json();
    if (!response.ok) throw new Error(next.error || `HTTP ${response.status}`);
    const changed = JSON.stringify(next) !== JSON.stringify(state);
    state = next;
    if (changed) {
      renderVoices();
      renderModels();
      renderOwnVoices();
    }
  } catch (err) {
    say(`The server did not answer: ${err.message}`, true);
  }
}

// ---- try a voice: the audio streams in frames (web.py FRAME) and plays as it comes

function tryVoice(name) {
  $("try-voice").value = name;
  renderSpeakers();
  speak();
}

async function speak() {
  stopSpeaking();
  const controller = new AbortController();
  speaking = controller;
  const voice = $("try-voice").value;
  const speaker = $("try-speaker").disabled ? null : $("try-speaker").value;
  const status = $("try-status");
  const result = { voice, firstAudioMs: null, samples: 0, rate: 0, done: false, error: null };
  window.lastSpeech = result;
  const audio = new (window.AudioContext || window.webkitAudioContext)();
  let playAt = 0;
  const started = performance.now();
  status.className = "";
  status.textContent = `Asking ${voice}… (a model's first use loads it, or downloads it)`;
  $("try-stop").disabled = false;
  try {
    const response = await fetch("api/speak", {
      method: "POST",
      headers: { "X-MultiTTS-Token": TOKEN, "Content-Type": "application/json" },
      body: JSON.stringify({ voice, speaker, text: $("try-text").value }),
      signal: controller.signal,
    });
    if (!response.ok) {
      const reply = await response.json().catch(() => ({}));
      throw new Error(reply.error || `HTTP ${response.status}`);
    }
    const reader = response.body.getReader();
    let pending = new Uint8Array(0);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const joined = new Uint8Array(pending.length + value.length);
      joined.set(pending);
      joined.set(value, pending.length);
      pending = joined;
      while (pending.length >= 5) {
        const view = new DataView(pending.buffer, pending.byteOffset);
        const kind = String.fromCharCode(pending[0]);
        const length = view.getUint32(1, true);
        if (pending.length < 5 + length) break;
        const payload = pending.slice(5, 5 + length);
        pending = pending.slice(5 + length);
        if (kind === "S") {
          result.rate = new DataView(payload.buffer).getUint32(0, true);
        } else if (kind === "A") {
          if (result.firstAudioMs === null) result.firstAudioMs = performance.now() - started;
          const pcm = new Int16Array(payload.buffer, 0, payload.length / 2);
          result.samples += pcm.length;
          const buffer = audio.createBuffer(1, pcm.length, result.rate);
          const channel = buffer.getChannelData(0);
          for (let i = 0; i < pcm.length; i++) channel[i] = pcm[i] / 32768;
          const source = audio.createBufferSource();
          source.buffer = buffer;
          source.connect(audio.destination);
          playAt = Math.max(playAt, audio.currentTime);
          source.start(playAt);
          playAt += buffer.duration;
          status.textContent =
            `First audio after ${(result.firstAudioMs / 1000).toFixed(2)} s; ` +
            `${(result.samples / result.rate).toFixed(1)} s of audio`;
        } else if (kind === "E") {
          throw new Error(new TextDecoder().decode(payload));
        } else if (kind === "D") {
          result.done = true;
        }
      }
    }
    if (!result.done) throw new Error("the server ended the audio early; see its log");
    status.textContent += " — done";
  } catch (err) {
    if (err.name === "AbortError") {
      status.textContent = "Stopped";
    } else {
      result.error = err.message;
      status.textContent = err.message;
      status.className = "error";
    }
  } finally {
    if (speaking === controller) speaking = null;
    $("try-stop").disabled = true;
  }
}

function stopSpeaking() {
  if (speaking) speaking.abort(); // the server cancels the request inside the worker
}

// ---- models

async function modelAction(name, action) {
  try {
    await postJson(`api/models/${encodeURIComponent(name)}/${action}`);
    say(action === "download" ? `Downloading model ${name}` : `Cancelled the download of ${name}`);
  } catch (err) {
    say(err.message, true);
  }
  refresh();
}

async function deleteFiles(name) {
  if (!confirm(`Delete the downloaded files of model ${name}?`)) return;
  try {
    const reply = await postJson(`api/models/${encodeURIComponent(name)}/delete`);
    say(`Deleted ${megabytes(reply.freed)} of model ${name}`);
  } catch (err) {
    say(err.message, true);
  }
  refresh();
}

// ---- your voices

let recorded = null; // a WAV Blob recorded in the browser

function wavFromSamples(samples, rate) {
  // 16-bit mono PCM WAV (RIFF), what the server's own voices take
  const buffer = new ArrayBuffer(44 + samples.length * 2);
  const view = new DataView(buffer);
  const text = (offset, s) => [...s].forEach((c, i) => view.setUint8(offset + i, c.charCodeAt(0)));
  text(0, "RIFF");
  view.setUint32(4, 36 + samples.length * 2, true);
  text(8, "WAVE");
  text(12, "fmt ");
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, rate, true);
  view.setUint32(28, rate * 2, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  text(36, "data");
  view.setUint32(40, samples.length * 2, true);
  samples.forEach((x, i) => view.setInt16(44 + i * 2, Math.max(-1, Math.min(1, x)) * 32767, true));
  return new Blob([buffer], { type: "audio/wav" });
}

let recorder = null;

async function record() {
  if (recorder) {
    recorder.stop();
    return;
  }
  try {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    const chunks = [];
    recorder = new MediaRecorder(stream);
    recorder.ondataavailable = (e) => chunks.push(e.data);
    recorder.onstop = async () => {
      stream.getTracks().forEach((t) => t.stop());
      recorder = null;
      $("own-record").textContent = "Record";
      const context = new AudioContext();
      const decoded = await context.decodeAudioData(await new Blob(chunks).arrayBuffer());
      recorded = wavFromSamples(decoded.getChannelData(0), decoded.sampleRate);
      $("own-recorded").textContent = `recorded ${decoded.duration.toFixed(1)} s`;
    };
    recorder.start();
    $("own-record").textContent = "Stop recording";
    setTimeout(() => recorder && recorder.stop(), MAX_RECORD_SECONDS * 1000);
  } catch (err) {
    say(`Cannot record: ${err.message} (the page needs a secure origin and a microphone)`, true);
  }
}

async function makeVoice(event) {
  event.preventDefault();
  const form = new FormData($("own-form"));
  const file = $("own-file").files[0];
  if (!file && recorded) form.set("recording", recorded, "recording.wav");
  else if (!file) {
    $("own-status").textContent = "Choose a WAV file or record one";
    $("own-status").className = "error";
    return;
  }
  $("own-status").className = "";
  $("own-status").textContent = "Making the voice…";
  try {
    const reply = await postJson("api/own-voices", form);
    $("own-status").textContent = `Made voice ${reply.name}`;
    $("own-form").reset();
    recorded = null;
    $("own-recorded").textContent = "";
  } catch (err) {
    $("own-status").textContent = err.message;
    $("own-status").className = "error";
  }
  refresh();
}

async function renameVoice(name) {
  const next = prompt(`New name of voice ${name}:`, name);
  if (!next) return;
  try {
    const reply = await postJson(`api/own-voices/${encodeURIComponent(name)}/rename`, { name: next });
    say(`Renamed ${name} to ${reply.name}`);
  } catch (err) {
    say(err.message, true);
  }
  refresh();
}

async function deleteVoice(name) {
  if (!confirm(`Delete voice ${name} and its recording?`)) return;
  try {
    await postJson(`api/own-voices/${encodeURIComponent(name)}/delete`);
    say(`Deleted voice ${name}`);
  } catch (err) {
    say(err.message, true);
  }
  refresh();
}

// ---- start

$("try-voice").addEventListener("change", renderSpeakers);
$("try-speak").addEventListener("click", speak);
$("try-stop").addEventListener("click", stopSpeaking);
$("own-record").addEventListener("click", record);
$("own-form").addEventListener("submit", makeVoice);
refresh();
setInterval(refresh, POLL_MS);
