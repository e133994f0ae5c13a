package modules

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-timings/vllm-timings/nixgen/nixtest"
	"github.com/vllm-timings/vllm-timings/patcher/testtree"
)

// imageContents is image-contents.json: what the image holds, whichever
// way it is built.
type imageContents struct {
	Files []struct {
		Path string `json:"path"`
		Type string `json:"type"`
		Mode string `json:"mode"`
		UID  int    `json:"uid"`
		GID  int    `json:"gid"`
	} `json:"files"`
	Config struct {
		Entrypoint []string          `json:"Entrypoint"`
		Env        []string          `json:"Env"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// imageBuildArgs is what packages.image gives dockerTools.buildImage.
type imageBuildArgs struct {
	Name          string         `json:"name"`
	Tag           string         `json:"tag"`
	ExtraCommands string         `json:"extraCommands"`
	Config        map[string]any `json:"config"`
	Rest          map[string]any `json:"rest"`
}

// TestImageEval evaluates the flake's packages.image (modules/image.nix)
// with nixpkgs' lib and a stand-in nixpkgs whose dockerTools.buildImage
// returns its arguments and whose buildGoModule gives a package around
// the real binary. Then it runs the layer's extraCommands as buildImage
// does (bash, in the empty directory that becomes the image's root) and
// requires exactly image-contents.json's files, and its config. The image
// itself, built by nixpkgs' dockerTools, is compared with the same file
// by the flake check image-contents, which runs only where nixpkgs is.
func TestImageEval(t *testing.T) {
	needFlake(t)
	bash := testtree.RequireTool(t, "bash")
	pkg, _ := vllmTimings(t)
	var got map[string]imageBuildArgs
	evalJSON(t, `{ libPath }: let
  lib = import (/. + libPath);
  drv = name: attrs: attrs // {
    type = "derivation";
    inherit name;
    outPath = "/nix/store/00000000000000000000000000000000-${name}";
  };
  standin = system: lib.fix (self: {
    inherit lib;
    stdenv.hostPlatform.system = system;
    callPackage = lib.callPackageWith self;
    buildGoModule = a: drv "${a.pname}-${a.version}" { inherit (a) version meta; } // { outPath = `+nixtest.String(pkg)+`; };
    gitMinimal = drv "git" { };
    util-linux = drv "util-linux" { };
    python3 = drv "python3" { withPackages = _: drv "python3-env" { }; };
    dockerTools.buildImage = args: drv "docker-image-${args.name}.tar.gz" { buildArgs = args; };
  });
  nixpkgs = {
    inherit lib;
    legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" ] standin;
  };
  flake = (import ../flake.nix).outputs { self = flake; inherit nixpkgs; };
  show = image: {
    inherit (image.buildArgs) name tag extraCommands config;
    rest = removeAttrs image.buildArgs [ "name" "tag" "extraCommands" "config" ];
  };
in lib.mapAttrs (_: ps: show ps.image) flake.packages`, &got)

	raw, err := os.ReadFile("image-contents.json")
	if err != nil {
		t.Fatal(err)
	}
	var want imageContents
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	wantConfig := map[string]any{}
	b, _ := json.Marshal(want.Config)
	if err := json.Unmarshal(b, &wantConfig); err != nil {
		t.Fatal(err)
	}

	for _, system := range []string{"x86_64-linux", "aarch64-linux"} {
		args, ok := got[system]
		if !ok {
			t.Errorf("no packages.%s.image", system)
			continue
		}
		if args.Name != "vllm-timings" || args.Tag != "0.1.0" {
			t.Errorf("%s: image %s:%s, want vllm-timings:0.1.0 (package.nix's version)", system, args.Name, args.Tag)
		}
		// No copyToRoot, contents or runAsRoot: the layer is extraCommands'
		// alone, and no store path comes into the image that way.
		if len(args.Rest) != 0 {
			t.Errorf("%s: buildImage gets more than name, tag, extraCommands and config: %v", system, args.Rest)
		}
		if diff := cmp.Diff(wantConfig, args.Config); diff != "" {
			t.Errorf("%s: the image's config differs from image-contents.json's (-want +got):\n%s", system, diff)
		}
	}

	// The layer, as mkPureLayer makes it: extraCommands run by bash in an
	// empty directory (chmod ug+w first), which is then the image's /.
	layer := t.TempDir()
	cmd := exec.Command(bash, "-euo", "pipefail", "-c", got["x86_64-linux"].ExtraCommands)
	cmd.Dir = layer
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("extraCommands: %v\n%s", err, out)
	}
	var files []string
	err = filepath.WalkDir(layer, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == layer {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		kind := "other"
		switch {
		case info.Mode().IsRegular():
			kind = "file"
		case info.IsDir():
			kind = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			kind = "symlink"
		}
		rel, _ := filepath.Rel(layer, p)
		files = append(files, fmt.Sprintf("%s %s %04o", rel, kind, info.Mode().Perm()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var wantFiles []string
	for _, f := range want.Files {
		// uid and gid are buildImage's tar --owner=0 --group=0, not the
		// commands'; the flake check sees them in the built image.
		wantFiles = append(wantFiles, fmt.Sprintf("%s %s %s", f.Path, f.Type, f.Mode))
	}
	sort.Strings(files)
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("the layer extraCommands make differs from image-contents.json's files (-want +got):\n%s", diff)
	}
	if same, err := sameBytes(filepath.Join(layer, "vllm-timings"), filepath.Join(pkg, "bin", "vllm-timings")); err != nil || !same {
		t.Errorf("the layer's /vllm-timings is not the package's binary (err %v)", err)
	}
}

func sameBytes(a, b string) (bool, error) {
	x, err := os.ReadFile(a)
	if err != nil {
		return false, err
	}
	y, err := os.ReadFile(b)
	if err != nil {
		return false, err
	}
	return string(x) == string(y), nil
}
