//! Rotating a credential file under a running process, the two ways it happens: a plain
//! overwrite in place, and a Kubernetes Secret volume update (`NAME -> ..data/NAME`,
//! `..data -> ..<version>`; an update writes a new version directory and renames a new `..data`
//! symlink over the old one, then removes the old version).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Rewrites `path` in place (same inode), mode 0600.
pub fn overwrite(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A Secret volume mounted at `dir`.
pub struct SecretVolume {
    pub dir: PathBuf,
}

static VERSIONS: AtomicU64 = AtomicU64::new(0);

impl SecretVolume {
    /// A volume holding `files` (name, content), mode 0640 as with `fsGroup`.
    pub fn new(dir: &Path, files: &[(&str, &str)]) -> SecretVolume {
        let volume = SecretVolume::at(dir);
        volume.update(files);
        for (name, _) in files {
            std::os::unix::fs::symlink(format!("..data/{name}"), dir.join(name)).unwrap();
        }
        volume
    }

    /// The volume already mounted at `dir`.
    pub fn at(dir: &Path) -> SecretVolume {
        SecretVolume {
            dir: dir.to_owned(),
        }
    }

    /// The path a process is given for `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The kubelet's atomic update: every file changes at once.
    pub fn update(&self, files: &[(&str, &str)]) {
        let old = std::fs::read_link(self.dir.join("..data")).ok();
        let n = VERSIONS.fetch_add(1, Ordering::SeqCst);
        let version = self.dir.join(format!("..2026_11_30_{n}"));
        std::fs::create_dir(&version).unwrap();
        for (name, text) in files {
            let file = version.join(name);
            std::fs::write(&file, text).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        }
        let tmp = self.dir.join("..data_tmp");
        std::os::unix::fs::symlink(version.file_name().unwrap(), &tmp).unwrap();
        std::fs::rename(&tmp, self.dir.join("..data")).unwrap();
        if let Some(old) = old {
            std::fs::remove_dir_all(self.dir.join(old)).unwrap();
        }
    }
}
