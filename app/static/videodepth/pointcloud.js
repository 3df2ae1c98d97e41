// The point-cloud viewer of the Video Depth tab (three.js, vendored; no CDN).
//
// The server sends one frame's points as JSON (base64 float32 positions, uint8 colours) as the value
// of a gr.HTML component; `show` draws them. It renders only when the view changes (orbit, zoom,
// resize, new points), so an idle page uses no CPU.
import * as THREE from "../vendor/three/three.module.js";
import { OrbitControls } from "../vendor/three/OrbitControls.js";

function decode(b64, Type) {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return new Type(bytes.buffer);
}

export function mount(root) {
  const host = root.querySelector(".pc-canvas");
  const status = root.querySelector(".pc-status");
  const renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(1);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0x202124);
  const camera = new THREE.PerspectiveCamera(55, 1, 0.01, 100);
  const controls = new OrbitControls(camera, renderer.domElement);
  let cloud = null;

  const render = () => renderer.render(scene, camera);
  const resize = () => {
    const w = Math.max(200, host.clientWidth || 400);
    const h = Math.round(w * 0.75);
    renderer.setSize(w, h, false);
    renderer.domElement.style.width = "100%";
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
    render();
  };
  controls.addEventListener("change", render);
  new ResizeObserver(resize).observe(host);

  function attach(newRoot) {
    const target = newRoot.querySelector(".pc-canvas");
    if (target && renderer.domElement.parentNode !== target) target.appendChild(renderer.domElement);
    return target;
  }

  function show(text, currentRoot) {
    const where = attach(currentRoot || root) || host;
    const statusEl = (currentRoot || root).querySelector(".pc-status") || status;
    if (!text) return;
    let data;
    try { data = JSON.parse(text); } catch (e) { return; }
    if (!data || !data.count) { statusEl.textContent = "No points."; return; }
    const positions = decode(data.positions, Float32Array);
    const colours = decode(data.colors, Uint8Array);
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.BufferAttribute(positions, 3));
    geometry.setAttribute("color", new THREE.BufferAttribute(colours, 3, true));
    geometry.computeBoundingSphere();
    if (cloud) { scene.remove(cloud); cloud.geometry.dispose(); }
    const sphere = geometry.boundingSphere;
    const size = Math.max(0.004, sphere.radius / Math.sqrt(data.count) * 1.6);
    cloud = new THREE.Points(geometry, new THREE.PointsMaterial({ size, vertexColors: true }));
    scene.add(cloud);
    // start a little to the side of the video's camera (the origin), so the depth is seen at once
    controls.target.copy(sphere.center);
    camera.position.set(0.9 * sphere.radius, 0.5 * sphere.radius, 0.2 * sphere.radius);
    controls.update();
    statusEl.textContent = `${data.title}: ${data.count} points · drag to orbit, scroll to zoom`;
    where.dataset.points = String(data.count);
    resize();
  }
  resize();
  return { show };
}
