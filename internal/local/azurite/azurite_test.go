package azurite_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offpath/offpath/internal/local/azurite"
)

func TestStart_ServesBlobsAndSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	az := azurite.StartIn(t, dir)
	ctx := context.Background()
	client, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	container := azurite.Name(t)
	if _, err := client.CreateContainer(ctx, container, nil); err != nil {
		t.Fatalf("create container: %v", err)
	}
	if _, err := client.UploadBuffer(ctx, container, "a.txt", []byte("hello"), nil); err != nil {
		t.Fatalf("upload: %v", err)
	}
	az.Stop()

	again := azurite.StartIn(t, dir)
	client, err = azblob.NewClientFromConnectionString(again.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	buf := make([]byte, 5)
	if _, err := client.DownloadBuffer(ctx, container, "a.txt", buf, nil); err != nil {
		t.Fatalf("download after restart: %v", err)
	}
	if string(buf) != "hello" {
		t.Fatalf("after restart got %q, want %q", buf, "hello")
	}
}

func TestStartInMemory_ServesBlobsAndWritesNothingToDisk(t *testing.T) {
	t.Parallel()
	az := azurite.StartInMemory(t)
	ctx := context.Background()
	client, err := azblob.NewClientFromConnectionString(az.ConnectionString(), nil)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	container := azurite.Name(t)
	if _, err := client.CreateContainer(ctx, container, nil); err != nil {
		t.Fatalf("create container: %v", err)
	}
	if _, err := client.UploadBuffer(ctx, container, "a.txt", []byte("hello"), nil); err != nil {
		t.Fatalf("upload: %v", err)
	}
	buf := make([]byte, 5)
	if _, err := client.DownloadBuffer(ctx, container, "a.txt", buf, nil); err != nil || string(buf) != "hello" {
		t.Fatalf("download: %q, %v", buf, err)
	}
	if entries, err := os.ReadDir(az.Dir); err != nil || len(entries) != 0 {
		t.Fatalf("in-memory Azurite wrote to its folder: %v %v", entries, err)
	}
}

func TestName_IsStorageSafe(t *testing.T) {
	t.Parallel()
	n := azurite.Name(t)
	if len(n) < 3 || len(n) > 63 || strings.ToLower(n) != n || strings.Contains(n, "_") {
		t.Fatalf("Name() = %q, not a valid container name", n)
	}
}
