package scenario

import (
	"os"
	"testing"

	"github.com/duradyn/duradyn/localstack"
)

func TestMain(m *testing.M) {
	// The bench module has its own go.mod, so localstack would look for
	// its emulator cache beside it: point it at the library's instead.
	if os.Getenv("DURADYN_CACHE_DIR") == "" {
		if dir := LibraryCacheDir(); dir != "" {
			os.Setenv("DURADYN_CACHE_DIR", dir)
		}
	}
	os.Exit(localstack.Main(m))
}
