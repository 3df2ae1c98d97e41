// The Avatar tab's in-browser viewer: the avatar's Gaussians drawn by Spark (vendored, on the vendored
// three.js), orbited with the mouse and re-posed live by skinning in the browser.
//
// Two hidden Gradio textboxes feed it. #av-payload holds, once per avatar, the rest-pose splats and each
// splat's four bones (backends/avatar/viewer.py); #av-bones holds, per pose, one rigid transform per bone.
// Splats are skinned on the GPU by Spark's SplatSkinning (dual-quaternion blend of the four bones); the
// mesh view is skinned here on the CPU with the same bones (linear blend, as on the server). It renders
// on demand (for a moment after each change, and once more whenever Spark says it has something new to
// show), so an idle page costs nothing, and reports its FPS.
//
// What the canvas shows is current is said on the root element: data-version counts the changes to what is
// to be shown (an avatar built, a pose applied, Gaussians/mesh toggled, the camera moved), and data-drawn-version is the
// version of the last frame drawn once Spark had nothing left to do for it. Spark (SparkRenderer, with
// autoUpdate and preUpdate, its defaults) regenerates the splats at the start of each render when they
// changed, shows them in the previous back-to-front order, and sorts in a worker; a new splat set (a new
// avatar) is not shown at all until its first sort is done. When the sort's order is uploaded it calls
// onDirty, and the next render draws it. A render after which Spark is not sorting, has no sort pending
// and displays the splats it last generated drew the splats of the current pose in their sorted order.
import * as THREE from "../vendor/three/three.module.js";
import { OrbitControls } from "../vendor/three/OrbitControls.js";
import { SparkRenderer, SplatMesh, SplatSkinning } from "../vendor/spark/spark.module.min.js";

function decode(b64, Type) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Type(bytes.buffer);
}

export function mount(root, payloadBox, bonesBox) {
  const host = root.querySelector(".av-canvas");
  const status = root.querySelector(".av-status");
  const fpsOut = root.querySelector(".av-fps");
  const renderer = new THREE.WebGLRenderer({ antialias: false, preserveDrawingBuffer: true });
  renderer.setPixelRatio(1);
  host.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0xffffff);
  // 3DGS's (and the server renderer's) 0.3 px² low-pass, without Spark's default opacity compensation, so
  // small Gaussians look as they do in the server's renders
  // onDirty: Spark has something new to show (a sort done): draw a frame for it, the one that shows a new
  // avatar or pose in its sorted order. No level of detail: these splats have no LoD tree.
  const spark = new SparkRenderer({ renderer, preBlurAmount: 0.3, blurAmount: 0.0, enableLod: false,
                                    onDirty: () => { if (!rendering) requestFrame(); } });
  scene.add(spark);
  scene.add(new THREE.HemisphereLight(0xffffff, 0x777777, 2.0));
  const sun = new THREE.DirectionalLight(0xffffff, 1.0);
  sun.position.set(1, -3, 4);
  scene.add(sun);
  const camera = new THREE.PerspectiveCamera(40, 1, 0.05, 50);
  camera.up.set(0, 0, 1);
  camera.position.set(0, -3.2, 0.1);
  const controls = new OrbitControls(camera, renderer.domElement);
  controls.target.set(0, 0, -0.05);

  let avatar = null; // { id, splats, skinning, mesh, restVerts, meshBones, bones }
  let shown = "gaussians";
  let lastPayload = "", lastBones = "";
  let activeUntil = 0, frames = 0, windowStart = 0, looping = false, rendering = false, framePending = false;
  let spin = null; // the Measure FPS orbit under way: { start, radius, z, frames }
  root.dataset.poseVersion = "0";
  root.dataset.version = "0";
  root.dataset.drawnVersion = "-1";
  const changed = () => { root.dataset.version = String(Number(root.dataset.version) + 1); };

  function resize() {
    const w = host.clientWidth || 480, h = Math.round(w * 1.1);
    renderer.setSize(w, h, false);
    renderer.domElement.style.height = h + "px";
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
  }
  resize();
  new ResizeObserver(() => { resize(); changed(); wake(); }).observe(host);

  // Spark's state right after a render (its update ran at the render's start): nothing left to sort or show
  const sparkSettled = () => !spark.sorting && !spark.sortDirty && spark.sortTimeoutId === -1
    && spark.updateTimeoutId === -1 && spark.display === spark.current;

  function draw() {
    controls.update();
    rendering = true;
    try {
      renderer.render(scene, camera);
    } finally {
      rendering = false;
    }
    // the version read here is the one just drawn: versions change only in other tasks
    if (sparkSettled() && root.dataset.drawnVersion !== root.dataset.version) {
      root.dataset.drawnVersion = root.dataset.version;
    }
  }
  function requestFrame() {
    if (looping || framePending) return; // the loop draws the next frame anyway
    framePending = true;
    requestAnimationFrame(() => {
      framePending = false;
      if (!looping) draw();
    });
  }

  function frame(now) {
    const spun = spin ? Math.max(0, Math.min(now - spin.start, 3000)) : 0;
    if (spin) {
      const a = (spun / 3000) * 2 * Math.PI, t = controls.target;
      camera.position.set(t.x + spin.radius * Math.sin(a), t.y - spin.radius * Math.cos(a), spin.z);
    }
    draw();
    frames++;
    if (spin) spin.frames++;
    if (spin && spun >= 3000) { // the orbit is over: its rate, over all of its frames, stays shown
      const fps = (spin.frames * 1000) / (now - spin.start);
      fpsOut.textContent = `${fps < 10 ? fps.toFixed(1) : Math.round(fps)} FPS`;
      root.dataset.fps = fps.toFixed(2);
      root.dataset.spinFps = fps.toFixed(2);
      root.dataset.spins = String(Number(root.dataset.spins || 0) + 1);
      spin = null;
      frames = 0;
      windowStart = now;
    }
    if (!spin && now - windowStart >= 1000) {
      const fps = (frames * 1000) / (now - windowStart); // below 10 with a decimal: a slow (software) GL is not "0 FPS"
      fpsOut.textContent = `${fps < 10 ? fps.toFixed(1) : Math.round(fps)} FPS`;
      root.dataset.fps = fps.toFixed(2);
      frames = 0;
      windowStart = now;
    }
    if (now < activeUntil || spin) requestAnimationFrame(frame);
    else looping = false;
  }
  function wake(ms = 1500) {
    activeUntil = performance.now() + ms;
    if (!looping) {
      looping = true;
      frames = 0;
      windowStart = performance.now();
      requestAnimationFrame(frame);
    }
  }
  controls.addEventListener("change", () => { changed(); wake(); }); // (controls.update() in draw() says so too)

  function setShown(kind) {
    shown = kind;
    root.querySelectorAll("[data-show]").forEach((b) => b.classList.toggle("av-on", b.dataset.show === kind));
    if (avatar) {
      avatar.splats.visible = kind === "gaussians";
      avatar.mesh.visible = kind === "mesh";
    }
    root.dataset.shown = kind;
    changed();
    wake();
  }
  root.querySelectorAll("[data-show]").forEach((b) => b.addEventListener("click", () => setShown(b.dataset.show)));
  root.querySelector(".av-spin").addEventListener("click", () => {
    // a 3-second orbit, rendering every frame (frame() moves the camera): the FPS shown is the viewer's
    // sustained rate (data-spin-fps and data-spins say it is over)
    if (spin) return;
    spin = { start: performance.now(), radius: camera.position.distanceTo(controls.target), z: camera.position.z,
             frames: 0 };
    wake(3000);
  });

  async function build(payload) {
    status.textContent = "loading the avatar…";
    if (avatar) {
      scene.remove(avatar.splats);
      scene.remove(avatar.mesh);
      avatar.splats.dispose?.();
      avatar.mesh.geometry.dispose();
    }
    const s = decode(payload.splats, Float32Array);
    const n = payload.count;
    const c = new THREE.Vector3(), sc = new THREE.Vector3(), q = new THREE.Quaternion(), col = new THREE.Color();
    const splats = new SplatMesh({
      constructSplats: (packed) => {
        for (let i = 0; i < n; i++) {
          const o = i * 14;
          c.set(s[o], s[o + 1], s[o + 2]);
          sc.set(s[o + 3], s[o + 4], s[o + 5]);
          q.set(s[o + 6], s[o + 7], s[o + 8], s[o + 9]);
          col.setRGB(s[o + 10], s[o + 11], s[o + 12]);
          packed.pushSplat(c, sc, q, s[o + 13], col);
        }
      },
    });
    await splats.initialized;
    const skin = decode(payload.splat_bones, Uint8Array);
    const skinning = new SplatSkinning({ mesh: splats, numBones: payload.bones });
    const zero = new THREE.Vector3(), ident = new THREE.Quaternion();
    for (let b = 0; b < payload.bones; b++) skinning.setRestQuatPos(b, ident, zero);
    const idx = new THREE.Vector4(), w = new THREE.Vector4();
    for (let i = 0; i < n; i++) {
      const o = i * 8;
      idx.set(skin[o], skin[o + 1], skin[o + 2], skin[o + 3]);
      w.set(skin[o + 4] / 255, skin[o + 5] / 255, skin[o + 6] / 255, skin[o + 7] / 255);
      skinning.setSplatBones(i, idx, w);
    }
    splats.skinning = skinning;
    splats.updateGenerator();
    scene.add(splats);

    const restVerts = decode(payload.mesh.vertices, Float32Array);
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.BufferAttribute(restVerts.slice(), 3));
    geometry.setAttribute("color", new THREE.BufferAttribute(decode(payload.mesh.colours, Uint8Array), 3, true));
    geometry.setIndex(new THREE.BufferAttribute(decode(payload.mesh.faces, Uint32Array), 1));
    geometry.computeVertexNormals();
    const mesh = new THREE.Mesh(geometry, new THREE.MeshLambertMaterial({ vertexColors: true, side: THREE.DoubleSide }));
    scene.add(mesh);
    avatar = { id: payload.id, splats, skinning, mesh, restVerts, meshBones: decode(payload.mesh.bones, Uint8Array),
               n, bones: payload.bones };
    controls.target.set(...payload.centre);
    camera.position.set(payload.centre[0], payload.centre[1] - 1.6 * payload.extent - 0.6, payload.centre[2] + 0.1);
    setShown(shown);
    root.dataset.avatar = payload.id;
    root.dataset.splats = String(n);
    status.textContent = `${n.toLocaleString()} Gaussians · drag to orbit, scroll to zoom`;
    lastBones = "";
    poll();
  }

  function applyBones(data) {
    const a = avatar;
    const q = new THREE.Quaternion(), p = new THREE.Vector3();
    const mats = new Float32Array(a.bones * 12); // row-major 3×4 per bone, for the mesh
    const m = new THREE.Matrix4();
    data.bones.forEach((b, j) => {
      q.set(b[0], b[1], b[2], b[3]);
      p.set(b[4], b[5], b[6]);
      a.skinning.setBoneQuatPos(j, q, p);
      m.compose(p, q, new THREE.Vector3(1, 1, 1));
      const e = m.elements; // column-major
      mats.set([e[0], e[4], e[8], e[12], e[1], e[5], e[9], e[13], e[2], e[6], e[10], e[14]], j * 12);
    });
    a.skinning.updateBones();
    const pos = a.mesh.geometry.attributes.position.array, rv = a.restVerts, sk = a.meshBones;
    for (let v = 0, nv = rv.length / 3; v < nv; v++) {
      const x = rv[3 * v], y = rv[3 * v + 1], z = rv[3 * v + 2];
      let ox = 0, oy = 0, oz = 0;
      for (let k = 0; k < 4; k++) {
        const wk = sk[8 * v + 4 + k] / 255;
        if (wk === 0) continue;
        const o = sk[8 * v + k] * 12;
        ox += wk * (mats[o] * x + mats[o + 1] * y + mats[o + 2] * z + mats[o + 3]);
        oy += wk * (mats[o + 4] * x + mats[o + 5] * y + mats[o + 6] * z + mats[o + 7]);
        oz += wk * (mats[o + 8] * x + mats[o + 9] * y + mats[o + 10] * z + mats[o + 11]);
      }
      pos[3 * v] = ox; pos[3 * v + 1] = oy; pos[3 * v + 2] = oz;
    }
    a.mesh.geometry.attributes.position.needsUpdate = true;
    a.mesh.geometry.computeVertexNormals();
    root.dataset.poseVersion = String(Number(root.dataset.poseVersion) + 1);
    changed();
    wake();
  }

  let building = false;
  function poll() {
    const text = payloadBox.value;
    const key = text ? text.length + ":" + text.slice(0, 40) : ""; // the avatar's id leads the JSON
    if (!building && key && key !== lastPayload) {
      lastPayload = key;
      let payload = null;
      try { payload = JSON.parse(text); } catch (e) { status.textContent = "bad avatar data: " + e; }
      if (payload && payload.id) {
        building = true;
        build(payload).catch((e) => { status.textContent = "the viewer failed: " + e; })
          .finally(() => { building = false; });
      }
    }
    const bones = bonesBox.value;
    if (avatar && !building && bones && bones !== lastBones) {
      lastBones = bones;
      try {
        const data = JSON.parse(bones);
        if (data.id === avatar.id) applyBones(data);
      } catch (e) { status.textContent = "bad pose data: " + e; }
    }
  }
  setInterval(poll, 200);
  setShown("gaussians");
  status.textContent = "reconstruct an avatar to see it here";
}
