// The 3D box editor of the 3D Layout tab (three.js, vendored; no CDN).
//
// The layout JSON lives in a Gradio Textbox (the single source of truth, validated on the server).
// The editor reads it (polling, so server-side edits show up) and writes it back on every edit
// by setting the textarea and dispatching an `input` event. World frame as in the backend:
// metres, z up, floor at z = 0, back wall at y = 3.4; the default view is the model's camera.
// It renders on demand (after an edit, a camera move, a gizmo hover, a resize), never in a loop, so
// an idle tab costs no CPU. A box takes the colour its prompt names (the model's colours, given by
// the tab in data-colours, then any CSS colour word); a prompt without one gets a palette colour.
import * as THREE from "../vendor/three/three.module.js";
import { OrbitControls } from "../vendor/three/OrbitControls.js";
import { TransformControls } from "../vendor/three/TransformControls.js";

const PALETTE = [0xe6194b, 0x3cb44b, 0x4363d8, 0xf58231, 0x911eb4, 0x46f0f0];
const CAMERA = { position: [0, -2.6, 1.55], target: [0, 1.0, 0.3], fov: 50 };
const ROOM = { x: [-2, 2], y: [-0.6, 3.4] };

// The colour a prompt names: the model's own colour words first, then any CSS colour word.
export function promptColour(prompt, modelColours, fallback) {
  for (const word of String(prompt).toLowerCase().split(/[^a-z]+/)) {
    if (!word) continue;
    if (modelColours[word]) return new THREE.Color().setRGB(...modelColours[word], THREE.SRGBColorSpace);
    if (typeof CSS !== "undefined" && CSS.supports("color", word)) return new THREE.Color(word);
  }
  return new THREE.Color(fallback);
}

// `server` holds the tab's server functions (gr.HTML server_functions): editor_add_box places a new box
// in free floor space (backends/layout3d/layout.add_box), editor_prompt_words flags unknown words.
export function mount(root, textarea, server) {
  const canvasHost = root.querySelector(".be-canvas");
  const status = root.querySelector(".be-status");
  const promptInput = root.querySelector(".be-prompt");
  const flag = root.querySelector(".be-flag");
  let modelColours = {};
  try { modelColours = JSON.parse(root.dataset.colours || "{}"); } catch (e) { modelColours = {}; }
  const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(1);
  canvasHost.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xf2f2f2);
  const camera = new THREE.PerspectiveCamera(CAMERA.fov, 1, 0.05, 50);
  camera.up.set(0, 0, 1);
  const orbit = new OrbitControls(camera, renderer.domElement);
  const gizmo = new TransformControls(camera, renderer.domElement);
  // --- rendering on demand: one frame per change, at most one per animation frame -----------
  let pending = false;
  root.renderCount = 0;  // test hook: frames drawn so far
  function requestRender() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      renderer.render(scene, camera);
      root.renderCount += 1;
    });
  }
  orbit.addEventListener("change", requestRender);
  gizmo.addEventListener("change", requestRender);
  gizmo.setSize(0.8);
  scene.add(gizmo.getHelper());
  scene.add(new THREE.HemisphereLight(0xffffff, 0x888888, 2.2));
  const sun = new THREE.DirectionalLight(0xffffff, 1.2);
  sun.position.set(-2, -3, 4);
  scene.add(sun);

  const floor = new THREE.Mesh(
    new THREE.PlaneGeometry(ROOM.x[1] - ROOM.x[0], ROOM.y[1] - ROOM.y[0]),
    new THREE.MeshLambertMaterial({ color: 0xb9a58c }));
  floor.position.set(0, (ROOM.y[0] + ROOM.y[1]) / 2, 0);
  scene.add(floor);
  const wall = new THREE.Mesh(new THREE.PlaneGeometry(ROOM.x[1] - ROOM.x[0], 2.5),
    new THREE.MeshLambertMaterial({ color: 0xe8e1d0, side: THREE.DoubleSide }));
  wall.rotation.x = Math.PI / 2;
  wall.position.set(0, ROOM.y[1], 1.25);
  scene.add(wall);
  const grid = new THREE.GridHelper(4, 8, 0x777777, 0x999999);
  grid.rotation.x = Math.PI / 2;
  grid.position.set(0, 1.4, 0.002);
  scene.add(grid);

  let layout = { scene_prompt: "", boxes: [] };
  let meshes = [];
  let selected = -1;
  let lastText = null;

  function resetView() {
    camera.position.set(...CAMERA.position);
    orbit.target.set(...CAMERA.target);
    orbit.update();
    requestRender();
  }
  resetView();

  function resize() {
    const w = canvasHost.clientWidth || 480;
    const h = Math.round(w * 0.75);
    renderer.setSize(w, h);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
    requestRender();
  }
  new ResizeObserver(resize).observe(canvasHost);
  resize();

  function boxMesh(b, i) {
    const colour = promptColour(b.prompt, modelColours, PALETTE[i % PALETTE.length]);
    const mesh = new THREE.Mesh(new THREE.BoxGeometry(1, 1, 1),
      new THREE.MeshLambertMaterial({ color: colour, transparent: true, opacity: 0.55 }));
    mesh.add(new THREE.LineSegments(new THREE.EdgesGeometry(mesh.geometry),
      new THREE.LineBasicMaterial({ color: 0x222222 })));
    mesh.position.set(...b.center);
    mesh.scale.set(...b.size);
    mesh.rotation.z = (b.yaw_deg || 0) * Math.PI / 180;
    mesh.userData.index = i;
    return mesh;
  }

  function rebuild() {
    gizmo.detach();
    meshes.forEach((m) => scene.remove(m));
    meshes = layout.boxes.map(boxMesh);
    meshes.forEach((m) => scene.add(m));
    if (selected >= meshes.length) selected = -1;
    if (selected >= 0) gizmo.attach(meshes[selected]);
    showStatus();
    requestRender();
  }

  function showStatus(msg) {
    const sel = selected >= 0 ? `box ${selected + 1} (${layout.boxes[selected].prompt}) selected` : "no box selected";
    status.textContent = msg || `${layout.boxes.length} box(es); ${sel}. Drag a box across the floor, or use the gizmo.`;
  }

  function round(v) { return Math.round(v * 1000) / 1000; }

  function meshToBox(m, old) {
    const size = [m.scale.x, m.scale.y, m.scale.z].map((v) => round(Math.max(0.1, Math.abs(v))));
    return {
      prompt: old.prompt,
      center: [round(m.position.x), round(m.position.y), round(size[2] / 2)],
      size,
      yaw_deg: round(((m.rotation.z * 180 / Math.PI) % 360 + 360) % 360),
    };
  }

  function write() {
    setText('{"scene_prompt": ' + JSON.stringify(layout.scene_prompt) + ',\n "boxes": [\n  '
      + layout.boxes.map((b) => JSON.stringify(b)).join(",\n  ") + "\n ]}");
  }

  function setText(text) {
    lastText = text;
    textarea.value = text;
    textarea.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function commitMesh(i) {
    const m = meshes[i];
    layout.boxes[i] = meshToBox(m, layout.boxes[i]);
    m.position.z = layout.boxes[i].center[2];  // boxes stand on the floor, upright, turned about z only
    m.rotation.x = 0;
    m.rotation.y = 0;
    requestRender();
    write();
    showStatus();
  }

  // --- reading the textbox (server edits, table edits, loaded files) ------------------------
  function poll() {
    const text = textarea.value;
    if (text !== lastText) {
      lastText = text;
      try {
        const parsed = JSON.parse(text);
        if (parsed && Array.isArray(parsed.boxes)) {
          layout = parsed;
          rebuild();
        }
      } catch (e) { showStatus("the layout JSON does not parse; fix it in the JSON box"); }
    }
  }
  setInterval(poll, 250);
  poll();

  // --- picking and dragging on the floor -----------------------------------------------------
  const ray = new THREE.Raycaster();
  const ndc = new THREE.Vector2();
  const floorPlane = new THREE.Plane(new THREE.Vector3(0, 0, 1), 0);
  let drag = null;

  function toNdc(ev) {
    const r = renderer.domElement.getBoundingClientRect();
    ndc.set(((ev.clientX - r.left) / r.width) * 2 - 1, -((ev.clientY - r.top) / r.height) * 2 + 1);
    ray.setFromCamera(ndc, camera);
  }

  renderer.domElement.addEventListener("pointerdown", (ev) => {
    if (gizmo.dragging || gizmo.axis) return;
    toNdc(ev);
    const hit = ray.intersectObjects(meshes, false)[0];
    if (!hit) return;
    selected = hit.object.userData.index;
    gizmo.attach(meshes[selected]);
    const p = new THREE.Vector3();
    ray.ray.intersectPlane(floorPlane, p);
    drag = { index: selected, offset: p ? hit.object.position.clone().sub(p) : new THREE.Vector3(), moved: false };
    orbit.enabled = false;
    showStatus();
    requestRender();
  });
  renderer.domElement.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    toNdc(ev);
    const p = new THREE.Vector3();
    if (!ray.ray.intersectPlane(floorPlane, p)) return;
    const m = meshes[drag.index];
    m.position.x = p.x + drag.offset.x;
    m.position.y = p.y + drag.offset.y;
    drag.moved = true;
    requestRender();
  });
  window.addEventListener("pointerup", () => {
    if (drag && drag.moved) commitMesh(drag.index);
    drag = null;
    orbit.enabled = true;
  });
  gizmo.addEventListener("dragging-changed", (e) => {
    orbit.enabled = !e.value;
    if (!e.value && selected >= 0) commitMesh(selected);
  });

  // --- toolbar ---------------------------------------------------------------------------------
  function setMode(mode) {  // move on the floor, turn about the vertical, scale along any axis
    gizmo.setMode(mode);
    gizmo.showX = mode !== "rotate";
    gizmo.showY = mode !== "rotate";
    gizmo.showZ = mode !== "translate";
    requestRender();
  }
  setMode("translate");

  // Adding asks the server where the box fits (free floor space, clear of the other boxes); adds
  // clicked in quick succession run one after another, each on the layout the previous one wrote.
  let adding = Promise.resolve();
  function addBox() {
    const prompt = promptInput.value.trim() || "a red cube";
    adding = adding.then(async () => {
      if (layout.boxes.length >= 5) return showStatus("at most 5 boxes");
      const reply = await server.editor_add_box({ layout: textarea.value, prompt });
      if (!reply || reply.error) return showStatus((reply && reply.error) || "the box could not be added");
      layout = JSON.parse(reply.layout);
      selected = layout.boxes.length - 1;
      setText(reply.layout);
      rebuild();
    }).catch((e) => showStatus("the box could not be added: " + e));
    return adding;
  }

  // Unknown words of the new box's prompt, flagged as it is typed (the server reads the model's vocabulary).
  let flagTimer = null;
  let flagAsked = 0;
  function checkPrompt() {
    clearTimeout(flagTimer);
    flagTimer = setTimeout(async () => {
      const asked = ++flagAsked;
      const model = document.querySelector("#l3d-model input");
      try {
        const line = await server.editor_prompt_words({ prompt: promptInput.value, model: model ? model.value : "" });
        if (asked === flagAsked) flag.textContent = line || "";
      } catch (e) { /* a failed check flags nothing; Generate still warns */ }
    }, 150);
  }
  promptInput.addEventListener("input", checkPrompt);
  checkPrompt();

  const act = {
    add: addBox,
    delete: () => {
      if (selected < 0) return;
      layout.boxes.splice(selected, 1);
      selected = -1;
      rebuild();
      write();
    },
    translate: () => setMode("translate"),
    rotate: () => setMode("rotate"),
    scale: () => setMode("scale"),
    view: () => resetView(),
  };
  root.querySelectorAll("[data-act]").forEach((b) => b.addEventListener("click", () => act[b.dataset.act]()));

  // Test hook: a box's colour as #rrggbb (sRGB).
  root.boxColour = (i) => "#" + meshes[i].material.color.getHexString(THREE.SRGBColorSpace);

  // Test hook: the screen position (client px) of a box's centre, for drag tests.
  root.boxScreenPosition = (i) => {
    const v = meshes[i].position.clone().project(camera);
    const r = renderer.domElement.getBoundingClientRect();
    return { x: r.left + (v.x + 1) / 2 * r.width, y: r.top + (1 - v.y) / 2 * r.height };
  };

  requestRender();
}
