"""Downloading real models through huggingface_hub's own client, against a small hub on loopback (tests/hubserver).

The repos served have the published layouts (the file lists of the registry's specs) with tiny contents.
"""

import hashlib
import socket

import pytest

from backends.common import download as dl
from backends.common import files
from backends.common.errors import Cancelled, DownloadError
from backends.common.progress import CancelToken, ProgressEvent, run_to_result
from backends.common.registry import default_registry, model_status
from backends.common.settings import Settings
from tests.hubserver import BAD_TOKEN, published


@pytest.fixture
def settings(tmp_path):
    return Settings(assets_dir=tmp_path / "assets", models_dir=tmp_path / "models", offline=True)


def run(spec, settings, cancel=None, token=None):
    events = []
    result = run_to_result(_collect(dl.download(spec, cancel, settings, token), events))
    return result, events


def _collect(work, events):
    for item in work:
        if isinstance(item, ProgressEvent):
            events.append(item)
        yield item


def test_full_download_of_a_published_layout_is_present_and_checked(hub, settings):
    spec = default_registry().get("sd15")
    repo = hub.repos[spec.location] = published(spec)
    assert model_status(spec, settings).present is False

    result, events = run(spec, settings)

    folder = settings.models_dir / spec.location
    assert result.folder == folder and sorted(result.files) == sorted(spec.files)
    for name in spec.files:
        assert (folder / name).read_bytes() == repo.files[name]
    assert events[0].message.startswith("Licence of sd15: CreativeML OpenRAIL-M")
    total = sum(len(repo.files[n]) for n in spec.files)
    last = [e.preview for e in events if e.preview is not None][-1]
    assert last.done_bytes == last.total_bytes == total and result.bytes_downloaded == total
    assert " at " in events[-1].message and "of" in events[-1].message
    weights = [n for n in spec.files if n.endswith(".safetensors")]
    assert sorted(result.sha256) == sorted(weights)
    assert all(result.sha256[n] == hashlib.sha256(repo.files[n]).hexdigest() for n in weights)
    st = model_status(spec, settings)
    assert st.present and st.path == folder
    assert dl.verify_download(folder) == []

    # the published sha256 catches a flipped byte in a weight file
    unet = folder / "unet/diffusion_pytorch_model.safetensors"
    data = bytearray(unet.read_bytes())
    data[1000] ^= 0xFF
    unet.write_bytes(bytes(data))
    problems = dl.verify_download(folder)
    assert len(problems) == 1 and "unet/diffusion_pytorch_model.safetensors" in problems[0]

    # a second run fetches nothing
    hub.log.clear()
    unet.write_bytes(repo.files["unet/diffusion_pytorch_model.safetensors"])
    again, _ = run(spec, settings)
    assert again.bytes_downloaded == 0 and not [r for r in hub.log if "/resolve/" in r[1]]


def test_a_folder_of_configs_only_is_missing(settings):
    spec = default_registry().get("controlnet-sd15-depth")
    folder = settings.models_dir / spec.location
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    assert model_status(spec, settings).present is False
    (folder / "diffusion_pytorch_model.safetensors").write_bytes(b"w")
    assert model_status(spec, settings).present is True


def test_a_connection_dropped_mid_file_resumes_with_a_range_request(hub, settings, monkeypatch):
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 8192)  # the client keeps whole chunks (10 MB by default)
    spec = default_registry().get("controlnet-sd15-depth")
    repo = hub.repos[spec.location] = published(spec)
    name = "diffusion_pytorch_model.safetensors"
    repo.drop_after[name] = 40_000

    result, _ = run(spec, settings)

    assert hub.ranges(name) == [None, "bytes=32768-"]  # the 4 whole chunks received are kept
    assert (result.folder / name).read_bytes() == repo.files[name]
    assert model_status(spec, settings).present


def test_stop_mid_file_keeps_the_whole_files_and_the_next_run_fetches_only_the_rest(hub, settings, monkeypatch):
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 8192)
    spec = default_registry().get("controlnet-sd15-depth")
    repo = hub.repos[spec.location] = published(spec)
    name = "diffusion_pytorch_model.safetensors"
    repo.pause_after[name] = 32_768
    token = CancelToken()

    chunks_after_stop = []
    with pytest.raises(Cancelled):
        for item in dl.download(spec, token, settings):
            # stop once the first bytes of the weights have arrived (the server holds the rest back until then)
            p = item.preview if isinstance(item, ProgressEvent) else None
            if token.cancelled:
                chunks_after_stop.append(item)
            elif p is not None and p.file == name and p.done_bytes > len(repo.files["config.json"]):
                token.cancel()
                repo.release.set()
    assert chunks_after_stop == []  # the next chunk after the Stop ended it

    folder = settings.models_dir / spec.location
    assert (folder / "config.json").read_bytes() == repo.files["config.json"]  # whole: kept
    assert not (folder / name).exists() and model_status(spec, settings).present is False
    assert not list(dl.staging_folder(folder).rglob("*.incomplete"))  # nothing half-fetched lies around
    st = model_status(spec, settings)
    assert "partly downloaded (1 of 2 files)" in st.problem and f"models download {spec.id}" in st.problem
    from backends.common.registry import ModelRegistry, status_table

    assert status_table(ModelRegistry([spec]), settings)[0][4] == "partial"

    hub.log.clear()
    result, _ = run(spec, settings)
    assert hub.ranges("config.json") == [] and hub.ranges(name) == [None]  # only what was missing
    assert (folder / name).read_bytes() == repo.files[name]
    assert result.bytes_downloaded == len(repo.files[name]) and model_status(spec, settings).present


@pytest.mark.parametrize("token, status", [(None, 401), ("hf_someone", 403)])
def test_a_gated_repo_says_accept_the_licence_and_log_in(hub, settings, token, status):
    spec = default_registry().get("sd3-medium")
    repo = hub.repos[spec.location] = published(spec, weight_bytes=64)
    repo.gated = True
    with pytest.raises(DownloadError) as info:
        run(spec, settings, token=token)
    message = str(info.value)
    assert info.value.kind == "gated"
    assert f"accept the licence on https://huggingface.co/{spec.location}" in message and "hf auth login" in message
    assert "missing" not in message and "Traceback" not in message
    assert any(m == "HEAD" for m, p, _ in hub.log if "/resolve/" in p)
    assert not (settings.models_dir / spec.location / "model_index.json").exists()


def test_a_wrong_token_says_log_in_again(hub, settings):
    spec = default_registry().get("controlnet-sd15-depth")
    hub.repos[spec.location] = published(spec)
    with pytest.raises(DownloadError) as info:
        run(spec, settings, token=BAD_TOKEN)
    assert info.value.kind == "auth" and "hf auth login" in str(info.value) and "refused" in str(info.value)


def test_a_repo_or_file_that_is_not_there_is_404_not_missing(hub, settings):
    spec = default_registry().get("depth-any-video")
    with pytest.raises(DownloadError) as info:
        run(spec, settings)
    assert info.value.kind == "not-found" and f"https://huggingface.co/{spec.location} does not exist" in str(info.value)

    repo = hub.repos[spec.location] = published(spec)
    del repo.files["unet_interp/diffusion_pytorch_model.safetensors"]
    with pytest.raises(DownloadError) as info:
        run(spec, settings)
    assert info.value.kind == "not-found" and "unet_interp/diffusion_pytorch_model.safetensors" in str(info.value)


def test_a_disk_too_small_stops_before_any_byte_with_how_much_to_free(hub, settings, monkeypatch):
    spec = default_registry().get("controlnet-sd15-depth")
    repo = hub.repos[spec.location] = published(spec)
    need = sum(len(repo.files[n]) for n in spec.files)
    usage = type("Usage", (), {"total": 10**12, "used": 0, "free": need - 2**20 // 4})
    monkeypatch.setattr(files.shutil, "disk_usage", lambda path: usage)
    with pytest.raises(DownloadError) as info:
        run(spec, settings)
    assert info.value.kind == "disk" and "free 256.0 kB" in str(info.value)
    assert not [r for r in hub.log if "/resolve/" in r[1]]


def test_no_network_is_a_clear_message(monkeypatch, settings):
    import huggingface_hub.constants as constants

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(DownloadError) as info:
        run(default_registry().get("controlnet-sd15-depth"), settings)
    assert info.value.kind == "network" and "cannot reach the Hugging Face Hub" in str(info.value)


def test_resolve_never_downloads_a_missing_model_it_names_it_where_it_looked_and_the_command(hub, settings):
    from backends.common.errors import ModelMissingError

    spec = default_registry().get("loose-control-3dbox")
    hub.repos[spec.location] = published(spec)
    online = settings.model_copy(update={"offline": False})  # even where downloads would be allowed
    with pytest.raises(ModelMissingError) as info:
        default_registry().resolve(spec.id, online)
    message = str(info.value)
    assert f"Model '{spec.id}' is missing" in message and str(settings.models_dir / spec.location) in message
    assert f"iclr25-studio models download {spec.id}" in message
    assert hub.log == []  # not one request to the hub
    run(spec, settings)  # the download is a person's decision
    found = default_registry().resolve(spec.id, online)
    assert found.where == "models folder" and (found.path / "pytorch_lora_weights.safetensors").is_file()


def test_the_fp16_variant_downloads_alone_and_resolves_as_fp16(hub, settings):
    spec = default_registry().get("controlnet-sd15-depth")
    repo = hub.repos[spec.location] = published(spec)
    result, _ = run_variant(spec, settings, "fp16")
    assert result.variant == "fp16" and result.files == ["config.json", "diffusion_pytorch_model.fp16.safetensors"]
    assert hub.ranges("diffusion_pytorch_model.safetensors") == []  # the fp32 weights were not fetched
    assert (result.folder / "diffusion_pytorch_model.fp16.safetensors").read_bytes() == repo.files[
        "diffusion_pytorch_model.fp16.safetensors"]
    found = default_registry().resolve(spec.id, settings)
    assert found.variant == "fp16" and model_status(spec, settings).present
    assert dl.verify_download(result.folder) == []

    with pytest.raises(DownloadError, match="publishes no fp16 weights"):
        run_variant(default_registry().get("depth-any-video"), settings, "fp16")


def run_variant(spec, settings, variant):
    return run_to_result(dl.download(spec, None, settings, variant=variant)), None


def test_a_second_download_of_the_same_model_at_once_is_refused(hub, settings):
    from backends.common.files import FolderLock

    spec = default_registry().get("controlnet-sd15-depth")
    hub.repos[spec.location] = published(spec)
    held = FolderLock(dl.staging_folder(settings.models_dir / spec.location))
    assert held.acquire()
    try:
        with pytest.raises(DownloadError, match="being downloaded right now") as info:
            run(spec, settings)
        assert info.value.kind == "busy"
    finally:
        held.release()
    result, _ = run(spec, settings)
    assert model_status(spec, settings).present and result.bytes_downloaded > 0


def test_a_hub_name_that_does_not_resolve_is_no_network(monkeypatch, settings):
    import huggingface_hub.constants as constants

    monkeypatch.setenv("HF_ENDPOINT", "http://hub.invalid")  # .invalid never resolves (RFC 2606)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(DownloadError) as info:
        run(default_registry().get("controlnet-sd15-depth"), settings)
    assert info.value.kind == "network"


def test_a_disk_that_fills_mid_download_says_free_space_and_the_next_run_completes(hub, settings, monkeypatch):
    import errno
    import pathlib

    spec = default_registry().get("controlnet-sd15-depth")
    repo = hub.repos[spec.location] = published(spec)
    name = "diffusion_pytorch_model.safetensors"

    class FillingUp:  # the hub client's temporary file of the weights: the disk is full after 50 kB
        def __init__(self, f):
            self.f = f

        def write(self, data):
            if self.f.tell() + len(data) > 50_000:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(data)

        def __getattr__(self, key):
            return getattr(self.f, key)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    real_open = pathlib.Path.open

    def filling_open(path, mode="r", *a, **k):
        f = real_open(path, mode, *a, **k)
        return FillingUp(f) if path.name.endswith(".incomplete") else f  # only the weights reach 50 kB

    monkeypatch.setattr(pathlib.Path, "open", filling_open)
    with pytest.raises(DownloadError) as info:
        run(spec, settings)
    assert info.value.kind == "disk" and "free some space" in str(info.value)
    assert model_status(spec, settings).present is False

    monkeypatch.setattr(pathlib.Path, "open", real_open)
    result, _ = run(spec, settings)
    assert (result.folder / name).read_bytes() == repo.files[name]
