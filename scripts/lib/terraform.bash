# terraform.bash: provider installation shared by scripts/tf-validate and
# scripts/tf-test. Source it; it defines functions and changes nothing until
# one is called.
#
# Providers come from a local filesystem mirror (layout
# registry.terraform.io/hashicorp/aws/<version>/<os>_<arch>/...). The mirror is
# $TF_PLUGIN_MIRROR when set, otherwise the first of Terraform's implied mirror
# directories that holds the AWS provider:
#
#   $XDG_DATA_HOME/terraform/plugins (default ~/.local/share/terraform/plugins)
#   ~/.terraform.d/plugins
#   /usr/local/share/terraform/plugins
#   /usr/share/terraform/plugins
#
# and failing those, a mirror found by a bounded search of /opt, /usr/local and
# $HOME (machine images often ship one there).
#
# Without a mirror the Terraform registry is used if it is reachable;
# otherwise tf_use_providers fails.

# tf_fail PROG MESSAGE: print "PROG: MESSAGE" on stderr and exit 1.
tf_fail() {
	echo "$1: $2" >&2
	exit 1
}

# tf_has_aws DIR: whether DIR is a filesystem mirror holding hashicorp/aws.
tf_has_aws() { compgen -G "$1/registry.terraform.io/hashicorp/aws/*/*" >/dev/null 2>&1; }

# tf_find_mirror PROG: print the mirror directory (absolute), or nothing when
# there is none. A TF_PLUGIN_MIRROR without the AWS provider is an error.
tf_find_mirror() {
	local prog=$1 dir found
	if [ -n "${TF_PLUGIN_MIRROR:-}" ]; then
		tf_has_aws "$TF_PLUGIN_MIRROR" ||
			tf_fail "$prog" "TF_PLUGIN_MIRROR=$TF_PLUGIN_MIRROR holds no registry.terraform.io/hashicorp/aws/<version>/<platform> directory"
		(cd "$TF_PLUGIN_MIRROR" && pwd)
		return
	fi
	for dir in \
		"${XDG_DATA_HOME:-$HOME/.local/share}/terraform/plugins" \
		"$HOME/.terraform.d/plugins" \
		/usr/local/share/terraform/plugins \
		/usr/share/terraform/plugins; do
		if tf_has_aws "$dir"; then
			(cd "$dir" && pwd)
			return
		fi
	done
	found=$(find /opt /usr/local "$HOME" -maxdepth 6 -type d -path '*/registry.terraform.io/hashicorp/aws' 2>/dev/null | head -n 1 || true)
	if [ -n "$found" ]; then
		(cd "${found%/registry.terraform.io/hashicorp/aws}" && pwd)
	fi
}

# tf_use_providers PROG TMPDIR: write a Terraform CLI configuration into
# TMPDIR that installs providers from the mirror (or the registry when there
# is no mirror and the registry answers), and export TF_CLI_CONFIG_FILE and
# the settings that keep a run out of the user's configuration and caches.
# Fails when there is neither a mirror nor the registry.
tf_use_providers() {
	local prog=$1 tmp=$2 mirror
	mirror=$(tf_find_mirror "$prog")
	export TF_CLI_CONFIG_FILE="$tmp/terraform.rc"
	if [ -n "$mirror" ]; then
		echo "$prog: providers from filesystem mirror $mirror"
		cat >"$TF_CLI_CONFIG_FILE" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.terraform.io/*/*"]
  }
}
RC
	elif command -v curl >/dev/null 2>&1 && curl -fsS -m 10 -o /dev/null https://registry.terraform.io/.well-known/terraform.json 2>/dev/null; then
		echo "$prog: no filesystem mirror found; providers from registry.terraform.io"
		: >"$TF_CLI_CONFIG_FILE"
	else
		tf_fail "$prog" "no provider mirror and no access to registry.terraform.io.
Put the hashicorp/aws provider in a filesystem mirror (terraform providers mirror DIR,
run where the registry is reachable) and set TF_PLUGIN_MIRROR=DIR, or place it in one of:
  ~/.local/share/terraform/plugins, ~/.terraform.d/plugins,
  /usr/local/share/terraform/plugins, /usr/share/terraform/plugins"
	fi
	# Keep providers, lock files and plugin caches of this run out of the
	# tree and out of the user's configuration.
	export TF_IN_AUTOMATION=1
	export CHECKPOINT_DISABLE=1
	unset TF_PLUGIN_CACHE_DIR
}
