package io.apicurio.registry.ccompat.rest.v7.impl;

import io.apicurio.registry.ccompat.rest.v7.beans.RegisterSchemaRequest;
import io.apicurio.registry.content.ContentHandle;
import io.apicurio.registry.content.TypedContent;
import io.apicurio.registry.model.GA;
import io.apicurio.registry.rules.RuleViolation;
import io.apicurio.registry.rules.RuleViolationException;
import io.apicurio.registry.storage.dto.ArtifactVersionMetaDataDto;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Sluice's addition (tools/registry): why a schema is incompatible with a subject's version.
 * Apicurio 3.0.9 answers a compatibility check with is_compatible only, even with verbose=true,
 * where Confluent adds `messages`. This runs the same rules as the check and returns the rule
 * violations it reports. It lives in Apicurio's package to use AbstractResource's subject and
 * version resolution (getGA, parseVersionString) unchanged.
 */
@ApplicationScoped
public class SluiceCompatibilityMessages extends AbstractResource {

  /** The violations, one line each; empty when the rules pass. */
  public List<String> explain(String subject, String version, String groupId, RegisterSchemaRequest request) {
    GA ga = getGA(groupId, subject);
    String group = ga.getRawGroupIdWithNull();
    String artifact = ga.getRawArtifactId();
    return parseVersionString(artifact, version, group, v -> {
      ArtifactVersionMetaDataDto meta = storage.getArtifactVersionMetaData(group, artifact, v);
      String contentType = "PROTOBUF".equals(meta.getArtifactType()) ? "application/x-protobuf" : "application/json";
      TypedContent content = TypedContent.create(ContentHandle.create(request.getSchema()), contentType);
      try {
        rulesService.applyRules(group, artifact, v, meta.getArtifactType(), content, Collections.emptyList(), Collections.emptyMap());
        return List.of();
      } catch (RuleViolationException e) {
        List<String> messages = new ArrayList<>();
        for (RuleViolation cause : e.getCauses()) {
          String context = cause.getContext();
          messages.add(context == null || context.isEmpty() ? cause.getDescription() : cause.getDescription() + " at " + context);
        }
        if (messages.isEmpty()) messages.add(e.getMessage());
        return messages;
      }
    });
  }
}
